//! The containers of this executor by id: an id is reserved while its /init runs, so a second
//! /init is refused, and holds the prepared container afterwards. A /destroy that arrives while
//! the /init runs dooms the container: the /init's result is dropped instead of kept, so a
//! container the invoker gave up on never lingers.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

/// A slot in the registry.
enum Slot<C> {
    Initializing,
    /// Destroyed while initializing: the /init's result will be dropped.
    Doomed,
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

/// What an attempt to reserve an id found.
pub enum Reserve<'a, C> {
    Reserved(Reservation<'a, C>),
    /// The id is in use.
    Taken,
    /// The registry is at its maximum size.
    Full,
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

    /// Reserves `id` for an /init, unless it is taken (initialized or initializing) or the
    /// registry already holds `max` containers.
    pub fn reserve(&self, id: &str, max: usize) -> Reserve<'_, C> {
        let mut slots = self.slots();
        if slots.contains_key(id) {
            return Reserve::Taken;
        }
        if slots.len() >= max {
            return Reserve::Full;
        }
        slots.insert(id.to_owned(), Slot::Initializing);
        Reserve::Reserved(Reservation {
            registry: self,
            id: id.to_owned(),
            committed: false,
        })
    }

    pub fn lookup(&self, id: &str) -> Lookup<C> {
        match self.slots().get(id) {
            Some(Slot::Ready(c)) => Lookup::Ready(Arc::clone(c)),
            Some(Slot::Initializing) => Lookup::Initializing,
            Some(Slot::Doomed) | None => Lookup::Unknown,
        }
    }

    /// Removes a container: a ready one at once (activations still running keep it alive until
    /// they end), an initializing one when its /init ends. False when there is no such id.
    pub fn remove(&self, id: &str) -> bool {
        let mut slots = self.slots();
        match slots.get_mut(id) {
            Some(Slot::Ready(_)) => {
                slots.remove(id);
                true
            }
            Some(slot @ Slot::Initializing) => {
                *slot = Slot::Doomed;
                true
            }
            Some(Slot::Doomed) | None => false,
        }
    }

    /// The ids of initialized and initializing containers.
    pub fn ids(&self) -> Vec<String> {
        let slots = self.slots();
        let mut ids: Vec<String> = slots
            .iter()
            .filter(|(_, slot)| !matches!(slot, Slot::Doomed))
            .map(|(id, _)| id.clone())
            .collect();
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

/// The container was destroyed while it initialized.
#[derive(Debug)]
pub struct Destroyed;

impl<C> Reservation<'_, C> {
    /// Keeps the container, unless it was destroyed meanwhile (then it is dropped).
    pub fn commit(mut self, container: C) -> Result<(), Destroyed> {
        let mut slots = self.registry.slots();
        if matches!(slots.get(&self.id), Some(Slot::Doomed)) {
            return Err(Destroyed);
        }
        self.committed = true;
        slots.insert(self.id.clone(), Slot::Ready(Arc::new(container)));
        Ok(())
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
        let reserve = |id: &str| match registry.reserve(id, 2) {
            Reserve::Reserved(r) => Some(r),
            _ => None,
        };
        let r = reserve("a").unwrap();
        assert!(reserve("a").is_none());
        assert!(matches!(registry.lookup("a"), Lookup::Initializing));
        drop(r);
        assert!(matches!(registry.lookup("a"), Lookup::Unknown));
        reserve("a").unwrap().commit(7).unwrap();
        assert!(matches!(registry.lookup("a"), Lookup::Ready(c) if *c == 7));
        assert!(reserve("a").is_none());
        let b = reserve("b").unwrap();
        assert!(
            matches!(registry.reserve("c", 2), Reserve::Full),
            "at its maximum"
        );
        drop(b);
        assert_eq!(registry.ready_count(), 1);
        assert!(registry.remove("a"));
        assert!(!registry.remove("a"));
        assert!(matches!(registry.lookup("a"), Lookup::Unknown));
    }

    #[test]
    fn destroyed_while_initializing_is_dropped_when_the_init_ends() {
        let registry: Registry<u32> = Registry::default();
        let Reserve::Reserved(init) = registry.reserve("c", 10) else {
            panic!("reserved");
        };
        assert!(registry.remove("c"), "a destroy is accepted");
        assert!(matches!(registry.lookup("c"), Lookup::Unknown));
        assert!(registry.ids().is_empty());
        assert!(
            matches!(registry.reserve("c", 10), Reserve::Taken),
            "held until the /init ends"
        );
        assert!(init.commit(9).is_err());
        assert!(matches!(registry.lookup("c"), Lookup::Unknown));
        assert!(matches!(registry.reserve("c", 10), Reserve::Reserved(_)));
    }
}
