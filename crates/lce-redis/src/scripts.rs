//! The Lua scripts: each one runs atomically in the engine and touches the
//! keys of one run (or one conversation) only, all in one hash slot.
//!
//! Conventions: `HGET meta sealed` is nil exactly when the run has no log
//! (never created, or expired), so every script starts there. A script that
//! takes a lease answers the engine's clock in milliseconds (`TIME`), from
//! which the caller scores the active-run index, so replicas with skewed clocks
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
/// ms, ttl ms (the unsealed run's expiry, which each renewal pushes back),
/// nonce, confirmed (`1`: appends wait for replicas, and readers see
/// entries up to the `confirmed` field only), retry. Answers -1 (a log
/// exists) or the engine's time in ms.
const CREATE: &str = concat!(
    now_ms!(),
    r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[7] == '1'
    and redis.call('HGET', KEYS[1], 'owner') == ARGV[2]
    and redis.call('HGET', KEYS[1], 'nonce') == ARGV[5]
    and redis.call('HGET', KEYS[1], 'conversation_id') == ARGV[1]
    and redis.call('HGET', KEYS[1], 'last') == '0' then
    return now
  end
  return -1
end
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'conversation_id', ARGV[1], 'owner', ARGV[2], 'sealed', '0', 'last', '0', 'nonce', ARGV[5])
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'confirmed', '0') end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
return now
"
);

/// `abandon`. KEYS: meta, log, lease. ARGV: owner. Answers -2 (no log), 0
/// (an entry, a terminal or another owner: nothing done) or
/// `{1, conversation id}` (every key of the run deleted; the caller clears
/// the conversation's running run and the active set).
const ABANDON: &str = r"
local state = redis.call('HMGET', KEYS[1], 'sealed', 'last', 'owner', 'conversation_id')
if not state[1] then return -2 end
if state[1] ~= '0' or state[2] ~= '0' or state[3] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return {1, state[4]}
";

/// The guard of an append of one or more entries at consecutive positions,
/// all or none. The append is one transaction (`MULTI`/`EXEC`): this
/// script, then one `XADD <log> NOMKSTREAM <position>-0 <field> <value>` per
/// entry, then [`UNFENCE`]. The entries never pass through Lua, where
/// converting them cost more than the `XADD`s themselves (see
/// `docs/performance.md`).
///
/// KEYS: meta, log, lease, fenced. ARGV: owner, first position, count,
/// terminal (`1`/`0`: the last entry is one), retention ms, retry, then on
/// a retry the first entry's field and value. Answers `ok`, `written` (both
/// `{answer, conversation id}` for a terminal, so the caller can clear the
/// conversation's running run; `written`: (a retry whose first entry is stored, identical:
/// the lost attempt wrote the batch, a batch being written whole or not at
/// all), `not_found`, `sealed`, `not_owner`, `gap` (the first position is
/// beyond the next one) or `out_of_order` (it is taken).
///
/// Only `ok` lets the `XADD`s write: for every other answer the script
/// moves the stream aside (`RENAME` to the `fenced` key, in the run's
/// slot), so `XADD ... NOMKSTREAM` finds no stream to write to, and
/// `UNFENCE` moves it back in the same transaction. On `ok` the script
/// makes sure the stream exists (an empty one, for the first append),
/// records the new last position, and for a terminal seals the log, drops
/// the lease and starts the retention of both keys. The stream entry id is
/// the position itself, so the engine too refuses an id that does not
/// grow.
pub(crate) const APPEND_GUARD: &str = r"
local function fence(answer)
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[4]) end
  return answer
end
local function terminal(word)
  if ARGV[4] == '1' then return {word, redis.call('HGET', KEYS[1], 'conversation_id')} end
  return word
end
local function guard()
  local last = redis.call('HGET', KEYS[1], 'last')
  if not last then return fence('not_found') end
  local first = tonumber(ARGV[2])
  local n = tonumber(ARGV[3])
  if ARGV[6] == '1' then
    local id = ARGV[2] .. '-0'
    local stored = redis.call('XRANGE', KEYS[2], id, id)[1]
    if stored and stored[2][1] == ARGV[7] and stored[2][2] == ARGV[8] then return fence(terminal('written')) end
  end
  if redis.call('HGET', KEYS[1], 'sealed') ~= '0' then return fence('sealed') end
  if redis.call('GET', KEYS[3]) ~= ARGV[1] then return fence('not_owner') end
  if ARGV[2] ~= string.format('%.0f', tonumber(last) + 1) then
    if first > tonumber(last) + 1 then return fence('gap') end
    return fence('out_of_order')
  end
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('XADD', KEYS[2], '0-1', 'idle', '1')
    redis.call('XDEL', KEYS[2], '0-1')
    -- Unsealed, it lives as long as its meta: until the retention after
    -- the owner's last renewal.
    local ttl = redis.call('PTTL', KEYS[1])
    redis.call('PEXPIRE', KEYS[2], ttl > 0 and ttl or ARGV[5])
  end
  redis.call('HSET', KEYS[1], 'last', string.format('%.0f', first + n - 1))
  if ARGV[4] == '1' then
    redis.call('HSET', KEYS[1], 'sealed', '1')
    redis.call('DEL', KEYS[3])
    redis.call('PEXPIRE', KEYS[1], ARGV[5])
    redis.call('PEXPIRE', KEYS[2], ARGV[5])
  end
  return terminal('ok')
end
-- Whatever fails in the guard fences the stream too: the XADDs queued
-- behind it must never write unguarded.
local done, answer = pcall(guard)
if done then return answer end
fence(nil)
return redis.error_reply('ERR the append guard failed')
";

/// The record that a run's entries up to a position are held by the
/// replicas required (`WAIT` confirmed the appends): readers see entries
/// up to the `confirmed` field. KEYS: meta. ARGV: the position. Never
/// moves it back (confirmations of batches in flight may come in any
/// order). Answers 1, or 0 when the run has no such field (gone, or
/// created without replicas to wait for).
pub(crate) const CONFIRM: &str = r"
local confirmed = redis.call('HGET', KEYS[1], 'confirmed')
if not confirmed then return 0 end
if tonumber(confirmed) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'confirmed', ARGV[1])
end
return 1
";

/// The end of an append's transaction: moves the stream back where
/// [`APPEND_GUARD`] fenced it. KEYS: log, fenced. Answers 1 (moved back)
/// or 0.
pub(crate) const UNFENCE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('RENAME', KEYS[2], KEYS[1])
  return 1
end
return 0
";

/// `renew`. KEYS: meta, lease, log. ARGV: owner, lease ms, ttl ms.
/// Answers -2 (no log), -1 (not the holder, or sealed) or `{the engine's
/// time in ms, conversation id, cancel}` (the caller refreshes the
/// conversation's running-run key with it; `cancel` is `1` once a cancel
/// was requested, so the owner needs no poll of its own). Pushes the
/// unsealed run's expiry back to the ttl.
const RENEW: &str = concat!(
    now_ms!(),
    r"
local sealed = redis.call('HGET', KEYS[1], 'sealed')
if not sealed then return -2 end
if sealed ~= '0' or redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return {now, redis.call('HGET', KEYS[1], 'conversation_id'), redis.call('HGET', KEYS[1], 'cancel') or '0'}
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

/// `claim`. KEYS: meta, lease, log. ARGV: claimant, lease ms, retry.
/// Answers -2 (no log), -3 (sealed), -1 (the lease holds) or the engine's
/// time in ms (the claimant owns the run now).
///
/// A run appended with replicas to wait for may hold entries past its
/// `confirmed` position: appends its owner gave up on, which no reader was
/// ever shown. The claim drops them (and moves the stream's last id back,
/// `XSETID`), so the claimant's closure goes right after what readers saw
/// and no position a reader saw is ever written with other bytes.
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
local confirmed = tonumber(redis.call('HGET', KEYS[1], 'confirmed'))
local last = tonumber(redis.call('HGET', KEYS[1], 'last'))
if confirmed and last and last > confirmed then
  if confirmed == 0 then
    redis.call('DEL', KEYS[3])
  else
    for p = confirmed + 1, last do
      redis.call('XDEL', KEYS[3], string.format('%.0f', p) .. '-0')
    end
    redis.call('XSETID', KEYS[3], string.format('%.0f', confirmed) .. '-0')
  end
  redis.call('HSET', KEYS[1], 'last', string.format('%.0f', confirmed))
end
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

/// A thread-store commit. KEYS: rev, last. ARGV: commit id, thread
/// retention ms, retry. Answers the new revision (`INCR`), or on a retry
/// of the last commit the revision it already got. Both keys expire the
/// thread retention after the thread's last commit.
const COMMIT: &str = r"
if ARGV[3] == '1' then
  local last = redis.call('HMGET', KEYS[2], 'commit', 'rev')
  if last[1] == ARGV[1] then return tonumber(last[2]) end
end
local rev = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], 'commit', ARGV[1], 'rev', rev)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return rev
";

/// The scripts, hashed once (called by `EVALSHA`; sent whole with `EVAL`
/// when the engine does not know them, as after a restart). The append's
/// two scripts are not here: they run inside a transaction, always sent
/// whole ([`APPEND_GUARD`], [`UNFENCE`]).
pub(crate) struct Scripts {
    pub(crate) create: Lua,
    pub(crate) abandon: Lua,
    pub(crate) renew: Lua,
    pub(crate) release: Lua,
    pub(crate) claim: Lua,
    pub(crate) expired: Lua,
    pub(crate) cancel: Lua,
    pub(crate) unmark_running: Lua,
}

impl Scripts {
    /// Every script, to load them up front.
    pub(crate) fn all(&self) -> [&Lua; 8] {
        [
            &self.create,
            &self.abandon,
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
            abandon: Lua::new(ABANDON),
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
