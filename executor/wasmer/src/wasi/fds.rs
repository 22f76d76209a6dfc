//! The descriptor table of one activation: stdio, the preopened directory (when `dir` was
//! granted) and what the guest opens below it. Descriptors die with the activation.

use std::collections::BTreeMap;

use super::abi::{Errno, WasiResult};
use wasm_executor::backend::host_limits::MAX_OPEN_DESCRIPTORS;

pub enum Descriptor {
    Stdin,
    Stdout,
    Stderr,
    /// A directory below the granted one; `preopen` is the guest path of the granted one.
    Dir {
        dir: cap_std::fs::Dir,
        preopen: Option<String>,
    },
    /// A file opened through a `Dir`, so it can only be one below the granted directory.
    File {
        file: std::fs::File,
        append: bool,
    },
}

pub struct FdTable {
    slots: BTreeMap<u32, Descriptor>,
}

impl FdTable {
    pub fn new(preopen: Option<(cap_std::fs::Dir, String)>) -> Self {
        let mut slots = BTreeMap::new();
        slots.insert(0, Descriptor::Stdin);
        slots.insert(1, Descriptor::Stdout);
        slots.insert(2, Descriptor::Stderr);
        if let Some((dir, path)) = preopen {
            slots.insert(
                3,
                Descriptor::Dir {
                    dir,
                    preopen: Some(path),
                },
            );
        }
        FdTable { slots }
    }

    pub fn get(&self, fd: u32) -> WasiResult<&Descriptor> {
        self.slots.get(&fd).ok_or(Errno::BADF)
    }

    pub fn get_mut(&mut self, fd: u32) -> WasiResult<&mut Descriptor> {
        self.slots.get_mut(&fd).ok_or(Errno::BADF)
    }

    pub fn dir(&self, fd: u32) -> WasiResult<&cap_std::fs::Dir> {
        match self.get(fd)? {
            Descriptor::Dir { dir, .. } => Ok(dir),
            _ => Err(Errno::NOTDIR),
        }
    }

    /// Stores `descriptor` under the lowest free number, as POSIX does.
    pub fn insert(&mut self, descriptor: Descriptor) -> WasiResult<u32> {
        if self.slots.len() >= MAX_OPEN_DESCRIPTORS {
            return Err(Errno::MFILE);
        }
        let mut fd = 0;
        for &used in self.slots.keys() {
            if used != fd {
                break;
            }
            fd += 1;
        }
        self.slots.insert(fd, descriptor);
        Ok(fd)
    }

    pub fn remove(&mut self, fd: u32) -> WasiResult<Descriptor> {
        self.slots.remove(&fd).ok_or(Errno::BADF)
    }

    /// `fd_renumber`: `from` replaces `to` (closing it) and `from` is freed.
    pub fn renumber(&mut self, from: u32, to: u32) -> WasiResult<()> {
        if !self.slots.contains_key(&to) {
            return Err(Errno::BADF);
        }
        let descriptor = self.remove(from)?;
        self.slots.insert(to, descriptor);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_reused_lowest_first() {
        let mut table = FdTable::new(None);
        assert_eq!(table.insert(Descriptor::Stdout).unwrap(), 3);
        assert_eq!(table.insert(Descriptor::Stdout).unwrap(), 4);
        table.remove(3).unwrap();
        assert_eq!(table.insert(Descriptor::Stderr).unwrap(), 3);
        assert_eq!(table.get(9).err(), Some(Errno::BADF));
        table.renumber(4, 0).unwrap();
        assert!(matches!(table.get(0), Ok(Descriptor::Stdout)));
        assert!(table.get(4).is_err());
    }

    #[test]
    fn the_table_is_bounded() {
        let mut table = FdTable::new(None);
        while table.insert(Descriptor::Stdin).is_ok() {}
        assert_eq!(table.insert(Descriptor::Stdin).err(), Some(Errno::MFILE));
    }
}
