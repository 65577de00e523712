//! Ids by kind: every open one exactly, and a bounded window of the most
//! recently closed ones.
//!
//! The validator must tell "already finished" from "never started" and
//! reject a second start of an id. Remembering every id ever closed makes
//! its memory grow with the run; a server runs unbounded runs. So each
//! [`Registry`] keeps the open entries (live state: never forgotten) and the
//! last `window` closed ones, in the order they closed (a FIFO ring of their
//! keys beside the map). Keys are exact strings (no fingerprint, no
//! collision): one `Arc<str>` shared by the map, the entry's slot and the
//! ring.
//!
//! Entries live in slots (a `Vec` with a free list); the map gives a key's
//! slot. Consecutive events nearly always name the same id (a span's
//! deltas), so the slot of the last id found is remembered: a look-up first
//! compares that slot's key with the id, and only hashes (SipHash, keyed per
//! map: HashDoS resistance is kept) when it differs. The remembered slot is
//! only a hint, checked against the slot's own key at every use: a freed or
//! reused slot cannot be mistaken for the id.

use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use std::sync::Arc;

/// `a == b`, for the short strings ids are: eight bytes at a time (the
/// first and the last eight, overlapping the others), without a call; 9 to
/// 16 bytes (the usual ids) are two comparisons and no loop. Longer strings
/// (over 64 bytes) and those under eight bytes compare as usual.
#[inline(always)]
pub(crate) fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if !(8..=64).contains(&n) {
        return a == b;
    }
    let word = |s: &[u8], i: usize| {
        s.get(i..i + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let last = n - 8;
    let mut diff = (word(a, 0) ^ word(b, 0)) | (word(a, last) ^ word(b, last));
    let mut i = 8;
    while i < last {
        diff |= word(a, i) ^ word(b, i);
        i += 8;
    }
    diff == 0
}

/// An entry that can be open or closed.
pub(crate) trait Closable {
    /// `true` once the entry is closed (finished, ended, exited).
    fn is_closed(&self) -> bool;
}

/// Open entries by id, and the last `window` closed ones.
#[derive(Debug)]
pub(crate) struct Registry<V> {
    /// The slot of each key.
    map: HashMap<Arc<str>, usize>,
    /// The entries, with their keys; `None`: a free slot.
    slots: Vec<Option<(Arc<str>, V)>>,
    /// The free slots, reused first.
    free: Vec<usize>,
    /// The slot of the last id found or inserted: tried before the map.
    hint: usize,
    /// Keys of the remembered closed entries, oldest first. Empty when the
    /// window is unbounded.
    closed: VecDeque<Arc<str>>,
    /// How many closed entries are remembered; `usize::MAX`: all of them.
    window: usize,
    /// A closed entry was forgotten: an unknown id may have been closed long
    /// ago.
    forgot: bool,
}

impl<V: Closable> Registry<V> {
    pub(crate) fn new(window: usize) -> Self {
        Registry {
            map: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            hint: 0,
            closed: VecDeque::new(),
            window,
            forgot: false,
        }
    }

    /// The slot holding `id`: the hinted one when its key is `id`, else
    /// through the map (then hinted).
    #[inline(always)]
    fn slot(&mut self, id: &str) -> Option<usize> {
        if let Some(Some((key, _))) = self.slots.get(self.hint) {
            if same_str(key, id) {
                return Some(self.hint);
            }
        }
        self.slot_by_hash(id)
    }

    /// [`slot`](Self::slot) through the map (out of line: the hinted case
    /// needs none of its registers).
    #[inline(never)]
    fn slot_by_hash(&mut self, id: &str) -> Option<usize> {
        let i = *self.map.get(id)?;
        self.hint = i;
        Some(i)
    }

    pub(crate) fn get(&mut self, id: &str) -> Option<&V> {
        self.get_mut(id).map(|v| &*v)
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut V> {
        let i = self.slot(id)?;
        match self.slots.get_mut(i) {
            Some(Some((_, v))) => Some(v),
            _ => None,
        }
    }

    pub(crate) fn contains(&mut self, id: &str) -> bool {
        self.slot(id).is_some()
    }

    /// Adds an entry (the caller checked `id` is not in the map).
    pub(crate) fn insert(&mut self, id: &str, value: V) {
        let key: Arc<str> = Arc::from(id);
        let entry = Some((Arc::clone(&key), value));
        let i = match self.free.pop() {
            Some(i) if i < self.slots.len() => {
                if let Some(s) = self.slots.get_mut(i) {
                    *s = entry;
                }
                i
            }
            _ => {
                self.slots.push(entry);
                self.slots.len() - 1
            }
        };
        if let Some(old) = self.map.insert(key, i) {
            // Not reached (the caller checked): free the replaced slot.
            self.release(old);
        }
        self.hint = i;
    }

    /// Empties slot `i` and makes it reusable.
    fn release(&mut self, i: usize) {
        if let Some(s) = self.slots.get_mut(i) {
            if s.take().is_some() {
                self.free.push(i);
            }
        }
    }

    /// Records that the entry of `id` was just closed, and forgets the
    /// oldest closed entries beyond the window.
    pub(crate) fn closed(&mut self, id: &str) {
        if self.window == usize::MAX {
            return;
        }
        let Some(i) = self.slot(id) else {
            return;
        };
        let Some(Some((key, _))) = self.slots.get(i) else {
            return;
        };
        let key = Arc::clone(key);
        // Grow the ring by doubling, but never past the window (a
        // `VecDeque` would round 4097 up to 8192 slots).
        let (len, cap) = (self.closed.len(), self.closed.capacity());
        if len == cap {
            let want = cap
                .saturating_mul(2)
                .max(8)
                .min(self.window.saturating_add(1));
            self.closed.reserve_exact(want.saturating_sub(len));
        }
        self.closed.push_back(key);
        while self.closed.len() > self.window {
            let Some(old) = self.closed.pop_front() else {
                break;
            };
            // Always closed: an id can only be started again once forgotten,
            // and it then left the ring. Checked anyway: open state is never
            // dropped.
            let Some(&j) = self.map.get(&*old) else {
                continue;
            };
            let closed = matches!(self.slots.get(j), Some(Some((_, v))) if v.is_closed());
            if closed {
                self.map.remove(&*old);
                self.release(j);
                self.forgot = true;
            }
        }
    }

    /// `true` once a closed entry was forgotten (never with an unbounded
    /// window): an id the registry does not know may then be one that closed
    /// more than `window` closes ago, not only one never started.
    pub(crate) fn forgot(&self) -> bool {
        self.forgot
    }

    /// Entries held: the open ones and the remembered closed ones.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The open and remembered closed entries.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten().map(|(_, v)| v)
    }

    /// Heap bytes: the table, slot, free-list and ring capacities and the
    /// key allocations (two `usize` counts of each `Arc` plus the id),
    /// without what the values own.
    pub(crate) fn footprint(&self) -> usize {
        let arc = 2 * size_of::<usize>();
        self.map.capacity() * (size_of::<(Arc<str>, usize)>() + 1)
            + self.map.keys().map(|k| arc + k.len()).sum::<usize>()
            + self.slots.capacity() * size_of::<Option<(Arc<str>, V)>>()
            + self.free.capacity() * size_of::<usize>()
            + self.closed.capacity() * size_of::<Arc<str>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(bool);
    impl Closable for E {
        fn is_closed(&self) -> bool {
            self.0
        }
    }

    #[test]
    fn window_keeps_the_last_closed() {
        let mut r = Registry::new(2);
        for id in ["a", "b", "c"] {
            r.insert(id, E(false));
        }
        r.insert("open", E(false));
        for id in ["a", "b", "c"] {
            if let Some(e) = r.get_mut(id) {
                e.0 = true;
            }
            r.closed(id);
        }
        assert!(r.forgot());
        assert!(!r.contains("a"));
        assert!(r.contains("b") && r.contains("c") && r.contains("open"));
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn the_hint_never_outlives_its_entry() {
        let mut r = Registry::new(1);
        r.insert("a", E(false));
        assert!(r.get("a").is_some());
        // "a" closes and is forgotten when "b" closes: its slot is freed
        // while it is the hint.
        if let Some(e) = r.get_mut("a") {
            e.0 = true;
        }
        r.closed("a");
        assert!(r.contains("a"), "within the window");
        r.insert("b", E(true));
        r.closed("b");
        assert!(r.forgot());
        assert!(r.get("a").is_none(), "forgotten");
        // The freed slot is reused by another id, hinted or not.
        assert!(r.get("b").is_some());
        r.insert("c", E(false));
        assert!(r.get("a").is_none());
        assert!(r.get("c").is_some_and(|e| !e.0));
        assert!(r.get("b").is_some_and(|e| e.0));
        assert!(r.get("a").is_none());
        // A forgotten id started again is a new entry.
        r.insert("a", E(false));
        assert!(r.get("a").is_some_and(|e| !e.0));
        assert_eq!(r.len(), 3);
        assert_eq!(r.values().count(), 3);
    }

    /// The registry before slots and the hint: the map of entries and the
    /// ring, what the slotted one must match exactly.
    struct Reference {
        map: HashMap<String, bool>,
        closed: VecDeque<String>,
        window: usize,
        forgot: bool,
    }

    impl Reference {
        fn closed(&mut self, id: &str) {
            if self.window == usize::MAX || !self.map.contains_key(id) {
                return;
            }
            self.closed.push_back(id.to_owned());
            while self.closed.len() > self.window {
                let Some(old) = self.closed.pop_front() else {
                    break;
                };
                if self.map.get(&old).is_some_and(|c| *c) {
                    self.map.remove(&old);
                    self.forgot = true;
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn slots_and_hint_match_the_plain_map(
            window in proptest::prop_oneof![1usize..5, proptest::strategy::Just(usize::MAX)],
            ops in proptest::collection::vec((0u8..4, 0u8..8), 0..200),
        ) {
            let mut r = Registry::new(window);
            let mut m = Reference { map: HashMap::new(), closed: VecDeque::new(), window, forgot: false };
            for (op, k) in ops {
                let id = format!("id{k}");
                match op {
                    // start (when unknown)
                    0 => {
                        proptest::prop_assert_eq!(r.contains(&id), m.map.contains_key(&id));
                        if !m.map.contains_key(&id) {
                            r.insert(&id, E(false));
                            m.map.insert(id.clone(), false);
                        }
                    }
                    // close (when open)
                    1 => {
                        if m.map.get(&id) == Some(&false) {
                            if let Some(e) = r.get_mut(&id) {
                                e.0 = true;
                            }
                            m.map.insert(id.clone(), true);
                            r.closed(&id);
                            m.closed(&id);
                        }
                    }
                    // look up
                    _ => {
                        proptest::prop_assert_eq!(r.get(&id).map(|e| e.0), m.map.get(&id).copied());
                    }
                }
                proptest::prop_assert_eq!(r.len(), m.map.len());
                proptest::prop_assert_eq!(r.values().count(), m.map.len());
                proptest::prop_assert_eq!(r.forgot(), m.forgot);
            }
            for k in 0..8u8 {
                let id = format!("id{k}");
                proptest::prop_assert_eq!(r.get(&id).map(|e| e.0), m.map.get(&id).copied());
            }
        }
    }

    #[test]
    fn same_str_is_equality() {
        let base = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..base.len() {
            let a = &base[..n];
            assert!(same_str(a, a));
            assert!(!same_str(a, &base[..n + 1]));
            for i in 0..n {
                let mut b = a.as_bytes().to_vec();
                b[i] = b'#';
                let b = String::from_utf8(b).unwrap_or_default();
                assert!(!same_str(a, &b), "{a} {b}");
            }
        }
    }

    /// Opens and closes `ids` in turn.
    fn open_and_close(r: &mut Registry<E>, ids: impl IntoIterator<Item = String>) {
        for id in ids {
            r.insert(&id, E(false));
            if let Some(e) = r.get_mut(&id) {
                e.0 = true;
            }
            r.closed(&id);
        }
    }

    #[test]
    fn the_ring_grows_by_doubling_to_one_past_the_window() {
        let mut r = Registry::new(100);
        let mut caps = Vec::new();
        for i in 0..300 {
            open_and_close(&mut r, [format!("id{i}")]);
            if caps.last() != Some(&r.closed.capacity()) {
                caps.push(r.closed.capacity());
            }
        }
        // 8, then doubled, then capped at the window + 1 (the close pushed
        // before the oldest is dropped), never rounded up past it.
        assert_eq!(caps, [8, 16, 32, 64, 101]);
        assert_eq!(r.closed.len(), 100);
        assert_eq!(r.len(), 100);
        // The oldest 200 are forgotten; the last 100 remembered.
        assert!(!r.contains("id199") && r.contains("id200") && r.contains("id299"));
    }

    #[test]
    fn a_window_of_one_remembers_exactly_the_last_close() {
        let mut r = Registry::new(1);
        open_and_close(&mut r, ["a".to_owned()]);
        assert!(r.contains("a") && !r.forgot());
        assert_eq!(r.closed.capacity(), 2);
        open_and_close(&mut r, ["b".to_owned()]);
        assert!(!r.contains("a") && r.contains("b") && r.forgot());
        assert_eq!((r.len(), r.closed.len(), r.closed.capacity()), (1, 1, 2));
        // The freed slot is reused.
        open_and_close(&mut r, ["c".to_owned()]);
        assert_eq!((r.slots.len(), r.free.len()), (2, 1));
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn footprint_counts_each_capacity_at_its_element_size() {
        let mut r = Registry::new(4);
        assert_eq!(r.footprint(), 0, "nothing allocated yet");
        open_and_close(&mut r, (0..6).map(|i| format!("id-{i}")));
        r.insert("open-one", E(false));
        let keys: usize = r.map.keys().map(|k| k.len()).sum();
        // 4 closed ids of 4 bytes and an open one of 8.
        assert_eq!((r.map.len(), keys), (5, 24));
        // A map bucket: an `Arc<str>` (16) and a slot index (8), and one
        // control byte; a key: two counts (16) and its bytes; a slot: the
        // `Option<(Arc<str>, E)>` (24, the `None` in the pointer's niche);
        // a free-list entry 8; a ring entry, an `Arc<str>` (16).
        let want = r.map.capacity() * 25
            + (5 * 16 + keys)
            + r.slots.capacity() * 24
            + r.free.capacity() * 8
            + r.closed.capacity() * 16;
        assert_eq!(r.footprint(), want);
        // The ring's own sizing: min(8, window + 1).
        assert_eq!(r.closed.capacity(), 5);
    }

    #[test]
    fn unbounded_forgets_nothing() {
        let mut r = Registry::new(usize::MAX);
        for i in 0..100 {
            let id = i.to_string();
            r.insert(&id, E(true));
            r.closed(&id);
        }
        assert_eq!(r.len(), 100);
        assert!(!r.forgot());
    }
}
