//! The Lua scripts: each one runs atomically in the engine and touches the
//! keys of one run (or one conversation) only, all in one hash slot.
//!
//! Conventions: `HGET meta sealed` is nil exactly when the run has no log
//! (never created, or expired), so every script starts there. A script that
//! takes a lease answers the engine's clock in milliseconds (`TIME`), from
//! which the caller scores `lce:active`, so replicas with skewed clocks
//! agree on deadlines. A trailing `retry` argument (`1` when the same call
//! is tried again after a lost answer) lets a script recognise its own
//! earlier success instead of refusing it.

use crate::engine::Lua;

/// The engine's clock in milliseconds, as a Lua expression's prelude.
macro_rules! now_ms {
    () => {
        "local t = redis.call('TIME')\n\
         local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    };
}

/// `create`. KEYS: meta, log, lease. ARGV: conversation id, owner, lease
/// ms, retry. Answers -1 (a log exists) or the engine's time in ms.
const CREATE: &str = concat!(
    now_ms!(),
    r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[4] == '1'
    and redis.call('HGET', KEYS[1], 'owner') == ARGV[2]
    and redis.call('HGET', KEYS[1], 'conversation_id') == ARGV[1]
    and redis.call('HGET', KEYS[1], 'last') == '0' then
    return now
  end
  return -1
end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'conversation_id', ARGV[1], 'owner', ARGV[2], 'sealed', '0', 'last', '0')
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
return now
"
);

/// `append` of one or more entries at consecutive positions, all or none.
/// KEYS: meta, log, lease. ARGV: owner, first position, terminal (`1`/`0`:
/// the last entry is one), retention ms, then a field and a value per
/// entry, then retry. Answers `ok` (for a terminal: `{ok, conversation
/// id}`, so the caller can clear the conversation's running run),
/// `not_found`, `sealed`, `not_owner`, `gap` (the first position is beyond
/// the next one) or `out_of_order` (it is taken).
///
/// The stream entry id is the position itself (`<position>-0`), so the
/// engine too refuses an id that does not grow; the script checks first
/// that the first position is exactly one after the last. A retry whose
/// first entry is stored, identical, finds its batch written (a batch is
/// written whole or not at all). A terminal seals the log, drops the lease
/// and starts the retention of both keys.
const APPEND: &str = r"
local function ok()
  if ARGV[3] == '1' then return {'ok', redis.call('HGET', KEYS[1], 'conversation_id')} end
  return 'ok'
end
local n = (#ARGV - 5) / 2
local last = redis.call('HGET', KEYS[1], 'last')
if not last then return 'not_found' end
local first = tonumber(ARGV[2])
if ARGV[#ARGV] == '1' then
  local id = ARGV[2] .. '-0'
  local stored = redis.call('XRANGE', KEYS[2], id, id)[1]
  if stored and stored[2][1] == ARGV[5] and stored[2][2] == ARGV[6] then return ok() end
end
if redis.call('HGET', KEYS[1], 'sealed') ~= '0' then return 'sealed' end
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 'not_owner' end
if ARGV[2] ~= string.format('%.0f', tonumber(last) + 1) then
  if first > tonumber(last) + 1 then return 'gap' end
  return 'out_of_order'
end
for i = 0, n - 1 do
  local id = string.format('%.0f', first + i) .. '-0'
  local added = redis.pcall('XADD', KEYS[2], id, ARGV[5 + 2 * i], ARGV[6 + 2 * i])
  if type(added) == 'table' and added.err then return 'out_of_order' end
end
redis.call('HSET', KEYS[1], 'last', string.format('%.0f', first + n - 1))
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'sealed', '1')
  redis.call('DEL', KEYS[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return ok()
";

/// `read` without waiting. KEYS: meta, log, lease. ARGV: first entry id,
/// count. Answers nil (no log) or `{sealed, lease exists, entries}`, one
/// consistent snapshot.
const READ: &str = r"
local sealed = redis.call('HGET', KEYS[1], 'sealed')
if not sealed then return false end
return {sealed, redis.call('EXISTS', KEYS[3]), redis.call('XRANGE', KEYS[2], ARGV[1], '+', 'COUNT', ARGV[2])}
";

/// `renew`. KEYS: meta, lease. ARGV: owner, lease ms. Answers -2 (no
/// log), -1 (not the holder, or sealed) or `{the engine's time in ms,
/// conversation id}` (the caller refreshes the conversation's running-run
/// key with it).
const RENEW: &str = concat!(
    now_ms!(),
    r"
local sealed = redis.call('HGET', KEYS[1], 'sealed')
if not sealed then return -2 end
if sealed ~= '0' or redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {now, redis.call('HGET', KEYS[1], 'conversation_id')}
"
);

/// `release`. KEYS: meta, lease. ARGV: owner. Answers -2 (no log), -1
/// (not the holder: nothing done) or the engine's time in ms.
const RELEASE: &str = concat!(
    now_ms!(),
    r"
if not redis.call('HGET', KEYS[1], 'sealed') then return -2 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[2])
return now
"
);

/// `claim`. KEYS: meta, lease. ARGV: claimant, lease ms, retry. Answers -2
/// (no log), -3 (sealed), -1 (the lease holds) or the engine's time in ms
/// (the claimant owns the run now).
const CLAIM: &str = concat!(
    now_ms!(),
    r"
local sealed = redis.call('HGET', KEYS[1], 'sealed')
if not sealed then return -2 end
if sealed ~= '0' then return -3 end
local holder = redis.call('GET', KEYS[2])
if holder then
  if ARGV[3] == '1' and holder == ARGV[1] and redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
    return now
  end
  return -1
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
return now
"
);

/// `request_cancel`. KEYS: meta. Answers -1 (no log), 0 (sealed: nothing
/// recorded) or 1 (`cancel` = `1` recorded, again or for the first time).
const CANCEL: &str = r"
local sealed = redis.call('HGET', KEYS[1], 'sealed')
if not sealed then return -1 end
if sealed ~= '0' then return 0 end
redis.call('HSET', KEYS[1], 'cancel', '1')
return 1
";

/// Clears a conversation's running run if it still names that run (a newer
/// run of the conversation may have replaced it). KEYS: the conversation's
/// `running` key. ARGV: run id. Answers 1 (deleted) or 0.
const UNMARK_RUNNING: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// `orphans`' candidates. KEYS: the active set. ARGV: how many at most.
/// The runs whose recorded lease deadline has passed by the engine's clock.
const EXPIRED: &str = concat!(
    now_ms!(),
    r"
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])
"
);

/// A thread-store commit. KEYS: rev, last. ARGV: commit id, retry.
/// Answers the new revision (`INCR`), or on a retry of the last commit the
/// revision it already got.
const COMMIT: &str = r"
if ARGV[2] == '1' then
  local last = redis.call('HMGET', KEYS[2], 'commit', 'rev')
  if last[1] == ARGV[1] then return tonumber(last[2]) end
end
local rev = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], 'commit', ARGV[1], 'rev', rev)
return rev
";

/// The scripts, hashed once (called by `EVALSHA`; sent whole with `EVAL`
/// when the engine does not know them, as after a restart).
pub(crate) struct Scripts {
    pub(crate) create: Lua,
    pub(crate) append: Lua,
    pub(crate) read: Lua,
    pub(crate) renew: Lua,
    pub(crate) release: Lua,
    pub(crate) claim: Lua,
    pub(crate) expired: Lua,
    pub(crate) cancel: Lua,
    pub(crate) unmark_running: Lua,
}

impl Scripts {
    /// Every script, to load them up front.
    pub(crate) fn all(&self) -> [&Lua; 9] {
        [
            &self.create,
            &self.append,
            &self.read,
            &self.renew,
            &self.release,
            &self.claim,
            &self.expired,
            &self.cancel,
            &self.unmark_running,
        ]
    }

    pub(crate) fn new() -> Self {
        Scripts {
            create: Lua::new(CREATE),
            append: Lua::new(APPEND),
            read: Lua::new(READ),
            renew: Lua::new(RENEW),
            release: Lua::new(RELEASE),
            claim: Lua::new(CLAIM),
            expired: Lua::new(EXPIRED),
            cancel: Lua::new(CANCEL),
            unmark_running: Lua::new(UNMARK_RUNNING),
        }
    }
}

/// The thread store's script.
pub(crate) fn commit() -> Lua {
    Lua::new(COMMIT)
}
