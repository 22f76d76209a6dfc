//! The descriptors a guest opened and still holds, for the backends whose WASI has no cap of
//! its own (wasmtime's, WAMR's): `path_open` refuses beyond [`MAX_GUEST_OPENED`] with `EMFILE`.

use std::collections::BTreeSet;

use crate::backend::host_limits::MAX_GUEST_OPENED;

/// WASI's `EMFILE`: too many open files.
pub const ERRNO_MFILE: u16 = 33;

#[derive(Debug, Default)]
pub struct OpenedDescriptors(BTreeSet<u32>);

impl OpenedDescriptors {
    /// Whether the guest may open one more.
    pub fn has_room(&self) -> bool {
        self.0.len() < MAX_GUEST_OPENED
    }

    /// The guest opened `fd`.
    pub fn opened(&mut self, fd: u32) {
        self.0.insert(fd);
    }

    /// The guest closed `fd`.
    pub fn closed(&mut self, fd: u32) {
        self.0.remove(&fd);
    }

    /// `fd_renumber(from, to)` succeeded: `to` was closed and `from` now goes by its number.
    pub fn renumbered(&mut self, from: u32, to: u32) {
        if self.0.remove(&from) {
            self.0.insert(to);
        } else {
            self.0.remove(&to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_moves_a_held_descriptor_and_closes_the_target() {
        let mut held = OpenedDescriptors::default();
        held.opened(5);
        held.opened(6);
        held.renumbered(5, 6);
        assert_eq!(held.0.iter().copied().collect::<Vec<_>>(), [6]);
        held.renumbered(3, 6);
        assert!(held.0.is_empty(), "renumbering stdio over it closed it");
        for fd in 0..MAX_GUEST_OPENED as u32 {
            held.opened(fd + 4);
        }
        assert!(!held.has_room());
        held.closed(4);
        assert!(held.has_room());
    }
}
