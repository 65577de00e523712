//! Ids by kind: every open one exactly, and a bounded window of the most
//! recently closed ones.
//!
//! The validator must tell "already finished" from "never started" and
//! reject a second start of an id. Remembering every id ever closed makes
//! its memory grow with the run; a server runs unbounded runs. So each
//! [`Registry`] keeps the open entries (live state: never forgotten) and the
//! last `window` closed ones, in the order they closed (a FIFO ring of their
//! keys beside the map). Keys are exact strings (no fingerprint, no
//! collision): one `Arc<str>` shared by the map and the ring.

use std::collections::{HashMap, VecDeque};
use std::mem::size_of;
use std::sync::Arc;

/// An entry that can be open or closed.
pub(crate) trait Closable {
    /// `true` once the entry is closed (finished, ended, exited).
    fn is_closed(&self) -> bool;
}

/// Open entries by id, and the last `window` closed ones.
#[derive(Debug)]
pub(crate) struct Registry<V> {
    map: HashMap<Arc<str>, V>,
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
            closed: VecDeque::new(),
            window,
            forgot: false,
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&V> {
        self.map.get(id)
    }

    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut V> {
        self.map.get_mut(id)
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.map.contains_key(id)
    }

    /// Adds an entry (the caller checked `id` is not in the map).
    pub(crate) fn insert(&mut self, id: &str, value: V) {
        self.map.insert(Arc::from(id), value);
    }

    /// Records that the entry of `id` was just closed, and forgets the
    /// oldest closed entries beyond the window.
    pub(crate) fn closed(&mut self, id: &str) {
        if self.window == usize::MAX {
            return;
        }
        let Some((key, _)) = self.map.get_key_value(id) else {
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
            if self.map.get(&*old).is_some_and(Closable::is_closed) {
                self.map.remove(&*old);
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
        self.map.values()
    }

    /// Heap bytes: the table and ring capacities and the key allocations
    /// (two `usize` counts of each `Arc` plus the id), without what the
    /// values own.
    pub(crate) fn footprint(&self) -> usize {
        let arc = 2 * size_of::<usize>();
        self.map.capacity() * (size_of::<(Arc<str>, V)>() + 1)
            + self.map.keys().map(|k| arc + k.len()).sum::<usize>()
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
