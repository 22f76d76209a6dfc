//! The containers of this executor by id: an id is reserved while its /init runs, so a second
//! /init is refused, and holds the prepared container afterwards.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// A slot in the registry.
enum Slot<C> {
    Initializing,
    Ready(Arc<C>),
}

pub struct Registry<C> {
    slots: Mutex<HashMap<String, Slot<C>>>,
}

/// What a lookup found.
pub enum Lookup<C> {
    Ready(Arc<C>),
    Initializing,
    Unknown,
}

/// An id reserved by an /init in progress; dropping it without [`Reservation::commit`]
/// frees the id again (a failed /init leaves nothing behind).
pub struct Reservation<'a, C> {
    registry: &'a Registry<C>,
    id: String,
    committed: bool,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry {
            slots: Mutex::new(HashMap::new()),
        }
    }
}

impl<C> Registry<C> {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot<C>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `id` for an /init; `None` when it is taken (initialized or initializing).
    pub fn reserve(&self, id: &str) -> Option<Reservation<'_, C>> {
        let mut slots = self.slots();
        if slots.contains_key(id) {
            return None;
        }
        slots.insert(id.to_owned(), Slot::Initializing);
        Some(Reservation {
            registry: self,
            id: id.to_owned(),
            committed: false,
        })
    }

    pub fn lookup(&self, id: &str) -> Lookup<C> {
        match self.slots().get(id) {
            Some(Slot::Ready(c)) => Lookup::Ready(Arc::clone(c)),
            Some(Slot::Initializing) => Lookup::Initializing,
            None => Lookup::Unknown,
        }
    }

    /// Removes a ready container; activations still running keep it alive until they end.
    pub fn remove(&self, id: &str) -> Option<Arc<C>> {
        let mut slots = self.slots();
        match slots.get(id) {
            Some(Slot::Ready(_)) => match slots.remove(id) {
                Some(Slot::Ready(c)) => Some(c),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.slots().keys().cloned().collect();
        ids.sort();
        ids
    }

    pub fn ready_count(&self) -> usize {
        self.slots()
            .values()
            .filter(|s| matches!(s, Slot::Ready(_)))
            .count()
    }
}

impl<C> Reservation<'_, C> {
    pub fn commit(mut self, container: C) {
        self.committed = true;
        self.registry
            .slots()
            .insert(self.id.clone(), Slot::Ready(Arc::new(container)));
    }
}

impl<C> Drop for Reservation<'_, C> {
    fn drop(&mut self) {
        if !self.committed {
            self.registry.slots().remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservation_lifecycle() {
        let registry: Registry<u32> = Registry::default();
        let r = registry.reserve("a").unwrap();
        assert!(registry.reserve("a").is_none());
        assert!(matches!(registry.lookup("a"), Lookup::Initializing));
        assert!(registry.remove("a").is_none());
        drop(r);
        assert!(matches!(registry.lookup("a"), Lookup::Unknown));
        registry.reserve("a").unwrap().commit(7);
        assert!(matches!(registry.lookup("a"), Lookup::Ready(c) if *c == 7));
        assert!(registry.reserve("a").is_none());
        assert_eq!(registry.ready_count(), 1);
        assert_eq!(*registry.remove("a").unwrap(), 7);
        assert!(matches!(registry.lookup("a"), Lookup::Unknown));
    }
}
