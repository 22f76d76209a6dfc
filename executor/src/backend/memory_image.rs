//! Memory images of language-engine instances: page runs of sealed in-memory files, mapped
//! copy-on-write into each fresh instance's linear memory, so an activation reads the state it
//! starts from out of pages every container shares and copies only the pages it writes. Where a
//! backend's memory cannot take a mapping, the same runs are copied into it.
//!
//! An engine's image holds what its data segments put in memory (the executor lifts them out of
//! the module, see `executor/engine-module`); an action's image is its engine's with the pages its
//! snapshot changed layered over them, from a file of the action's own. A file is sealed once
//! written: nothing, the executor included, can change pages that live instances map. A memory
//! an image was mapped into can be reset to it (only the pages an instance changed), for a
//! backend that reuses memories.

use std::{
    io,
    os::fd::{AsFd, OwnedFd},
    ptr::NonNull,
    sync::{Arc, OnceLock},
};

use rustix::{
    fs::{MemfdFlags, SealFlags},
    mm::{Advice, MapFlags, ProtFlags},
};

use super::dirty_pages;

/// Pages between two changed stretches that are written into an action's file anyway, so that
/// an instance takes one mapping for both (a mapping costs about as much as copying a few pages).
const MERGED_GAP_PAGES: usize = 8;
/// The most runs an image may add over its base; beyond it, nearer stretches are merged. Every
/// run is one mapping of each live instance (the kernel's per-process map count is finite).
const MAX_RUNS_ADDED: usize = 64;
/// Bytes copied from an image's file into a new one at a time.
const BOUNCE_BYTES: usize = 256 << 10;

/// The host's page size, the grain of every run.
pub fn host_page_bytes() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(rustix::param::page_size)
}

/// A sealed in-memory file of image pages.
#[derive(Debug)]
struct ImageFile {
    fd: OwnedFd,
}

/// Memory bytes `[start, start + len)` hold the file's bytes from `offset` (all page-aligned).
#[derive(Debug, Clone)]
struct Run {
    start: usize,
    len: usize,
    file: Arc<ImageFile>,
    offset: usize,
}

impl Run {
    fn end(&self) -> usize {
        self.start + self.len
    }
}

/// What a fresh instance's memory holds beyond zeros: disjoint page runs in ascending order.
/// Clones share the runs (and are [`MemoryImage::same`]).
#[derive(Debug, Default, Clone)]
pub struct MemoryImage {
    runs: Arc<[Run]>,
}

/// A changed stretch of pages of a new image and the bytes written into it.
struct Stretch {
    start: usize,
    end: usize,
}

impl MemoryImage {
    /// Whether `other` is this image (a clone of it), not merely alike.
    pub fn same(&self, other: &MemoryImage) -> bool {
        Arc::ptr_eq(&self.runs, &other.runs)
    }

    /// Whether a clone of this image exists besides this value.
    pub fn held_elsewhere(&self) -> bool {
        Arc::strong_count(&self.runs) > 1
    }

    /// Bytes of memory the image reaches (0 for an image of zeros only).
    pub fn end(&self) -> usize {
        self.runs.last().map_or(0, Run::end)
    }

    /// Mappings an instance takes for it.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes of the image that are in files of its own, not shared with its base.
    pub fn own_bytes(&self, base: &MemoryImage) -> usize {
        self.runs
            .iter()
            .filter(|run| !base.runs.iter().any(|b| Arc::ptr_eq(&b.file, &run.file)))
            .map(|run| run.len)
            .sum()
    }

    /// This image with `writes` (offset, bytes; in any order, overlapping or not, later ones
    /// winning) applied: the pages they touch are written, over this image's contents, into a
    /// new file; every other page stays shared with this image.
    pub fn with_writes<'a>(
        &self,
        writes: impl IntoIterator<Item = (usize, &'a [u8])> + Clone,
    ) -> io::Result<MemoryImage> {
        let page = host_page_bytes();
        let covered = written(writes.clone())?;
        if covered.is_empty() {
            return Ok(self.clone());
        }
        let touched: Vec<(usize, usize)> = covered
            .iter()
            .map(|&(start, end)| (start / page, end.div_ceil(page)))
            .collect();
        let stretches = merged(&touched, page);
        let file_bytes: usize = stretches.iter().map(|s| s.end - s.start).sum();
        let fd = rustix::fs::memfd_create(
            "wasm-memory-image",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        // Written with pwrite, never mapped writable: a page written whole is never zeroed
        // first, and a page nothing writes stays a hole that reads as zeros.
        rustix::fs::ftruncate(&fd, file_bytes as u64)?;
        let file = Arc::new(ImageFile { fd });
        let mut added = Vec::with_capacity(stretches.len());
        let mut offset = 0;
        for stretch in &stretches {
            let len = stretch.end - stretch.start;
            added.push(Run {
                start: stretch.start,
                len,
                file: Arc::clone(&file),
                offset,
            });
            offset += len;
        }
        // This image's bytes where no write lands, then the writes in their order.
        let mut bounce = Vec::new();
        for (start, end) in uncovered(&added, &covered) {
            self.copy_to_file(start, end, &added, &mut bounce)?;
        }
        for (at, bytes) in writes {
            let mut done = 0;
            while done < bytes.len() {
                let position = at + done;
                let run = run_at(&added, position)?;
                let n = (run.end() - position).min(bytes.len() - done);
                write_exact_at(
                    &file.fd,
                    &bytes[done..done + n],
                    run.offset + (position - run.start),
                )?;
                done += n;
            }
        }
        rustix::fs::fcntl_add_seals(
            &file.fd,
            SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
        )?;
        Ok(MemoryImage {
            runs: layered(&self.runs, added).into(),
        })
    }

    /// Writes this image's bytes of memory `[start, end)` into the new runs `added` that hold
    /// that range (a page run of the file stays a hole where this image has zeros).
    fn copy_to_file(
        &self,
        start: usize,
        end: usize,
        added: &[Run],
        bounce: &mut Vec<u8>,
    ) -> io::Result<()> {
        for run in self
            .runs
            .iter()
            .filter(|r| r.start < end && start < r.end())
        {
            let mut at = run.start.max(start);
            let to = run.end().min(end);
            while at < to {
                let target = run_at(added, at)?;
                let n = (to - at).min(target.end() - at).min(BOUNCE_BYTES);
                bounce.resize(n, 0);
                read_exact_at(&run.file.fd, bounce, run.offset + (at - run.start))?;
                write_exact_at(&target.file.fd, bounce, target.offset + (at - target.start))?;
                at += n;
            }
        }
        Ok(())
    }

    /// Writes the image into `memory` (an instance's linear memory, zero where the image has
    /// no run) by copying.
    pub fn copy_into(&self, memory: &mut [u8]) -> io::Result<()> {
        self.check_fits(memory.len())?;
        for run in self.runs.iter() {
            read_exact_at(&run.file.fd, &mut memory[run.start..run.end()], run.offset)?;
        }
        Ok(())
    }

    /// Maps the image copy-on-write over the linear memory at `memory` of `len` accessible
    /// bytes: each run replaces the pages there with a private mapping of its file's pages.
    ///
    /// # Safety
    ///
    /// `memory` is page-aligned and `[memory, memory + len)` is a private mapping of this
    /// process that the caller's instance owns alone: nothing reads or writes it meanwhile, and
    /// it is unmapped, never reused for another instance, when the instance ends (or the
    /// instance's pages would keep the image's contents).
    pub unsafe fn map_into(&self, memory: NonNull<u8>, len: usize) -> io::Result<()> {
        self.check_fits(len)?;
        if !(memory.as_ptr() as usize).is_multiple_of(host_page_bytes()) {
            return Err(io::Error::other("the memory is not page-aligned"));
        }
        for run in self.runs.iter() {
            // SAFETY: the range lies inside the caller's memory (checked above), which the
            // caller owns alone; MAP_FIXED replaces exactly those pages.
            unsafe {
                rustix::mm::mmap(
                    memory.as_ptr().add(run.start).cast(),
                    run.len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::PRIVATE | MapFlags::FIXED,
                    &run.file.fd,
                    run.offset as u64,
                )?;
            }
        }
        Ok(())
    }

    /// Returns the memory at `memory` (`len` bytes, accessible), into which this image was
    /// mapped, to the image's contents: every page an instance changed is copied from the image
    /// again (zeroed outside it) while `keep` bytes last, and given back to the kernel beyond
    /// (which then reads it from the image's file, or as zeros, at its next use). Pages nobody
    /// changed keep their mappings. Where the kernel cannot tell which pages changed, all are
    /// given back.
    ///
    /// # Safety
    ///
    /// As for [`MemoryImage::map_into`]; the image was mapped there and nothing else since but
    /// the instance's own reads and writes.
    pub unsafe fn reset(&self, memory: NonNull<u8>, len: usize, keep: usize) -> io::Result<()> {
        let base = memory.as_ptr() as usize;
        let Ok(changed) = dirty_pages::changed(base, len) else {
            // SAFETY: the caller's own mapping; nothing refers into it meanwhile.
            return unsafe { discard(memory.as_ptr(), len) };
        };
        let mut kept = 0;
        for range in changed {
            let (start, end) = (range.start - base, range.end.min(base + len) - base);
            let mut at = start;
            while at < end {
                // The part of the range up to the next boundary between image and zeros.
                let run = self.runs.iter().find(|r| r.end() > at);
                let (until, from_file) = match run {
                    Some(run) if run.start <= at => (run.end().min(end), Some(run)),
                    Some(run) => (run.start.min(end), None),
                    None => (end, None),
                };
                // SAFETY: `[at, until)` lies in the caller's memory, which nothing else uses.
                let part =
                    unsafe { std::slice::from_raw_parts_mut(memory.as_ptr().add(at), until - at) };
                if kept + part.len() <= keep {
                    match from_file {
                        Some(run) => {
                            read_exact_at(&run.file.fd, part, run.offset + (at - run.start))?
                        }
                        None => part.fill(0),
                    }
                    kept += part.len();
                } else {
                    // SAFETY: as above.
                    unsafe { discard(part.as_mut_ptr(), part.len()) }?;
                }
                at = until;
            }
        }
        Ok(())
    }

    /// Undoes [`MemoryImage::map_into`]: the image's pages in the memory at `memory` become
    /// zeros again (an anonymous mapping), accessible below `accessible` bytes and not beyond.
    ///
    /// # Safety
    ///
    /// As for [`MemoryImage::map_into`], with the memory reserved up to at least the image's
    /// end.
    pub unsafe fn unmap_from(&self, memory: NonNull<u8>, accessible: usize) -> io::Result<()> {
        let end = self.end();
        let open = accessible.min(end);
        // SAFETY: both ranges lie in the caller's reservation, which nothing else uses.
        unsafe {
            if open > 0 {
                rustix::mm::mmap_anonymous(
                    memory.as_ptr().cast(),
                    open,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
                )?;
            }
            if end > open {
                rustix::mm::mmap_anonymous(
                    memory.as_ptr().add(open).cast(),
                    end - open,
                    ProtFlags::empty(),
                    MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
                )?;
            }
        }
        Ok(())
    }

    fn check_fits(&self, len: usize) -> io::Result<()> {
        if self.end() > len {
            return Err(io::Error::other(format!(
                "the memory image needs {} bytes of memory, the instance has {len}",
                self.end()
            )));
        }
        Ok(())
    }
}

/// Page ranges (sorted) merged into stretches of bytes: those closer than the gap become one,
/// the gap widened until at most [`MAX_RUNS_ADDED`] remain.
fn merged(pages: &[(usize, usize)], page: usize) -> Vec<Stretch> {
    let mut gap = MERGED_GAP_PAGES;
    loop {
        let mut stretches: Vec<(usize, usize)> = Vec::new();
        for &(start, end) in pages {
            match stretches.last_mut() {
                Some(last) if start <= last.1 + gap => last.1 = last.1.max(end),
                _ => stretches.push((start, end)),
            }
        }
        if stretches.len() <= MAX_RUNS_ADDED {
            return stretches
                .into_iter()
                .map(|(start, end)| Stretch {
                    start: start * page,
                    end: end * page,
                })
                .collect();
        }
        gap = gap * 2 + 1;
    }
}

/// The byte ranges `writes` cover, sorted and merged.
fn written<'a>(
    writes: impl IntoIterator<Item = (usize, &'a [u8])>,
) -> io::Result<Vec<(usize, usize)>> {
    let mut ranges: Vec<(usize, usize)> = writes
        .into_iter()
        .filter(|(_, bytes)| !bytes.is_empty())
        .map(|(at, bytes)| {
            at.checked_add(bytes.len())
                .map(|end| (at, end))
                .ok_or_else(|| io::Error::other("a write ends beyond the address space"))
        })
        .collect::<io::Result<_>>()?;
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    Ok(merged)
}

/// The parts of the runs `added` (sorted, disjoint) outside `covered` (sorted, disjoint).
fn uncovered(added: &[Run], covered: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut next = 0;
    for run in added {
        let mut at = run.start;
        while next < covered.len() && covered[next].1 <= at {
            next += 1;
        }
        let mut i = next;
        while at < run.end() {
            match covered.get(i) {
                Some(&(start, end)) if start < run.end() => {
                    if at < start {
                        parts.push((at, start));
                    }
                    at = at.max(end);
                    i += 1;
                }
                _ => {
                    parts.push((at, run.end()));
                    at = run.end();
                }
            }
        }
    }
    parts
}

/// The run of `runs` (sorted, disjoint) that holds memory offset `position`.
fn run_at(runs: &[Run], position: usize) -> io::Result<&Run> {
    let at = runs.partition_point(|run| run.end() <= position);
    runs.get(at)
        .filter(|run| run.start <= position)
        .ok_or_else(|| io::Error::other("a write fell outside its stretch"))
}

/// `base` with `added` (sorted, disjoint) laid over it: base runs cut where added ones cover.
fn layered(base: &[Run], added: Vec<Run>) -> Vec<Run> {
    let mut runs = Vec::with_capacity(base.len() + 2 * added.len());
    for run in base {
        let mut pieces = vec![run.clone()];
        for cover in added
            .iter()
            .filter(|a| a.start < run.end() && run.start < a.end())
        {
            pieces = pieces
                .into_iter()
                .flat_map(|piece| {
                    if cover.end() <= piece.start || piece.end() <= cover.start {
                        return vec![piece];
                    }
                    let before = (piece.start < cover.start).then(|| Run {
                        len: cover.start - piece.start,
                        ..piece.clone()
                    });
                    let after = (cover.end() < piece.end()).then(|| Run {
                        start: cover.end(),
                        len: piece.end() - cover.end(),
                        offset: piece.offset + (cover.end() - piece.start),
                        file: Arc::clone(&piece.file),
                    });
                    before.into_iter().chain(after).collect()
                })
                .collect();
        }
        runs.extend(pieces);
    }
    runs.extend(added);
    runs.sort_unstable_by_key(|run| run.start);
    runs
}

/// Gives the pages back to the kernel: a private file mapping reads its file again, an
/// anonymous one zeros.
///
/// # Safety
///
/// `[start, start + len)` is a page-aligned private mapping nothing refers into.
unsafe fn discard(start: *mut u8, len: usize) -> io::Result<()> {
    // SAFETY: as the caller guarantees.
    unsafe { rustix::mm::madvise(start.cast(), len, Advice::LinuxDontNeed) }?;
    Ok(())
}

fn read_exact_at(fd: impl AsFd, mut target: &mut [u8], mut offset: usize) -> io::Result<()> {
    while !target.is_empty() {
        match rustix::io::pread(&fd, &mut *target, offset as u64) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                target = &mut target[n..];
                offset += n;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

fn write_exact_at(fd: impl AsFd, mut bytes: &[u8], mut offset: usize) -> io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::pwrite(&fd, bytes, offset as u64) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                offset += n;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anonymous private mapping standing in for an instance's memory.
    struct Reservation {
        base: NonNull<u8>,
        len: usize,
    }

    impl Reservation {
        fn new(len: usize) -> Self {
            // SAFETY: a fresh anonymous mapping.
            let base = unsafe {
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::PRIVATE,
                )
            }
            .unwrap();
            Reservation {
                base: NonNull::new(base.cast()).unwrap(),
                len,
            }
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: the whole mapping, owned by this reservation.
            unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr(), self.len) }
        }
    }

    impl Drop for Reservation {
        fn drop(&mut self) {
            // SAFETY: the mapping `new` made.
            unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) }.unwrap();
        }
    }

    fn expected(len: usize, layers: &[&[(usize, Vec<u8>)]]) -> Vec<u8> {
        let mut memory = vec![0; len];
        for writes in layers {
            for (at, bytes) in writes.iter() {
                memory[*at..at + bytes.len()].copy_from_slice(bytes);
            }
        }
        memory
    }

    fn borrowed(writes: &[(usize, Vec<u8>)]) -> Vec<(usize, &[u8])> {
        writes.iter().map(|(at, b)| (*at, b.as_slice())).collect()
    }

    #[test]
    fn mapped_and_copied_images_hold_every_layer_and_zeros_elsewhere() {
        let page = host_page_bytes();
        let len = 64 * page;
        let data = vec![
            (100, vec![7u8; 3 * page]),
            (20 * page + 5, vec![9u8; 10]),
            (30 * page, vec![5u8; 30 * page]),
        ];
        // Two stretches fall inside the last data run, far enough apart to stay two.
        let changes = vec![
            (150, vec![1u8; 20]),
            (2 * page - 3, vec![2u8; 6]),
            (40 * page, vec![3u8; page + 1]),
            (20 * page + 8, vec![4u8; 2]),
            (55 * page, vec![6u8; 3]),
        ];
        let engine = MemoryImage::default().with_writes(borrowed(&data)).unwrap();
        let action = engine.with_writes(borrowed(&changes)).unwrap();
        let want = expected(len, &[&data, &changes]);
        for pair in action.runs.windows(2) {
            assert!(
                pair[0].end() <= pair[1].start,
                "runs overlap: {:?}",
                action.runs
            );
        }

        let mut mapped = Reservation::new(len);
        // SAFETY: the reservation is this test's own private mapping.
        unsafe { action.map_into(mapped.base, len) }.unwrap();
        assert_eq!(mapped.bytes(), want.as_slice());

        let mut copied = vec![0xAA; len];
        copied.fill(0);
        action.copy_into(&mut copied).unwrap();
        assert_eq!(copied, want);

        // The engine's own image is untouched by the action's layer.
        let mut engine_only = Reservation::new(len);
        // SAFETY: as above.
        unsafe { engine.map_into(engine_only.base, len) }.unwrap();
        assert_eq!(engine_only.bytes(), expected(len, &[&data]).as_slice());
    }

    #[test]
    fn overlapping_writes_land_in_their_order_over_the_image_beneath() {
        let page = host_page_bytes();
        let len = 16 * page;
        let data = vec![(0, vec![1u8; 6 * page]), (12 * page + 7, vec![8u8; 3])];
        let engine = MemoryImage::default().with_writes(borrowed(&data)).unwrap();
        let changes = vec![
            (3 * page + 10, vec![2u8; 2 * page]),
            (page, vec![3u8; 100]),
            // Over part of the first write: the later one wins.
            (3 * page, vec![4u8; 20]),
            (4 * page, vec![6u8; 1]),
            // Across the end of the engine's data, with zeros around it.
            (6 * page - 5, vec![5u8; 10]),
            (12 * page + 8, vec![7u8; 1]),
        ];
        let action = engine.with_writes(borrowed(&changes)).unwrap();
        let mut copied = vec![0; len];
        action.copy_into(&mut copied).unwrap();
        assert_eq!(copied, expected(len, &[&data, &changes]));
    }

    #[test]
    fn writes_to_a_mapped_image_stay_in_the_instance() {
        let page = host_page_bytes();
        let image = MemoryImage::default()
            .with_writes([(0, &[5u8; 64][..])])
            .unwrap();
        let mut first = Reservation::new(4 * page);
        let mut second = Reservation::new(4 * page);
        // SAFETY: the reservations are this test's own private mappings.
        unsafe {
            image.map_into(first.base, 4 * page).unwrap();
            image.map_into(second.base, 4 * page).unwrap();
        }
        first.bytes()[0] = 99;
        assert_eq!(
            second.bytes()[0],
            5,
            "copy-on-write: the other instance keeps the image"
        );
        let mut third = Reservation::new(4 * page);
        // SAFETY: as above.
        unsafe { image.map_into(third.base, 4 * page) }.unwrap();
        assert_eq!(third.bytes()[0], 5, "the file itself is never written");
    }

    #[test]
    fn a_reset_memory_holds_its_image_again_whatever_was_kept_resident() {
        let page = host_page_bytes();
        let len = 32 * page;
        let data = vec![
            (page, vec![7u8; 4 * page]),
            (20 * page, vec![8u8; 2 * page]),
        ];
        let image = MemoryImage::default().with_writes(borrowed(&data)).unwrap();
        let want = expected(len, &[&data]);
        for keep in [0, 3 * page, 64 * page] {
            let mut memory = Reservation::new(len);
            // SAFETY: the reservation is this test's own private mapping.
            unsafe { image.map_into(memory.base, len) }.unwrap();
            for round in 0..3u8 {
                let bytes = memory.bytes();
                // Read some pages (mapped from the file), write others in and out of the image.
                let _ = bytes[2 * page] + bytes[21 * page];
                for at in [0, page + 5, 3 * page, 10 * page, 20 * page + 1, 31 * page] {
                    bytes[at] = round + 1;
                }
                // SAFETY: as above.
                unsafe { image.reset(memory.base, len, keep) }.unwrap();
                assert_eq!(
                    memory.bytes(),
                    want.as_slice(),
                    "keep {keep}, round {round}"
                );
            }
        }
    }

    #[test]
    fn an_unmapped_image_leaves_zeros_and_the_memory_beyond_inaccessible() {
        let page = host_page_bytes();
        let image = MemoryImage::default()
            .with_writes([(0, &[3u8; 100][..]), (6 * page, &[4u8; 10][..])])
            .unwrap();
        let mut memory = Reservation::new(8 * page);
        // SAFETY: the reservation is this test's own private mapping.
        unsafe {
            image.map_into(memory.base, 8 * page).unwrap();
            image.unmap_from(memory.base, 4 * page).unwrap();
        }
        assert!(memory.bytes()[..4 * page].iter().all(|&b| b == 0));
        // SAFETY: as above; the test makes the rest accessible again to look.
        unsafe {
            rustix::mm::mprotect(
                memory.base.as_ptr().add(4 * page).cast(),
                4 * page,
                rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::WRITE,
            )
        }
        .unwrap();
        assert!(memory.bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn an_image_larger_than_the_memory_is_an_error() {
        let page = host_page_bytes();
        let image = MemoryImage::default()
            .with_writes([(3 * page, &[1u8][..])])
            .unwrap();
        let mut small = Reservation::new(2 * page);
        // SAFETY: the reservation is this test's own private mapping.
        assert!(unsafe { image.map_into(small.base, 2 * page) }.is_err());
        assert!(image.copy_into(small.bytes()).is_err());
    }

    #[test]
    fn scattered_writes_are_merged_into_a_bounded_number_of_runs() {
        let page = host_page_bytes();
        let writes: Vec<(usize, Vec<u8>)> = (0..1000)
            .map(|i| (i * 20 * page, vec![i as u8 | 1]))
            .collect();
        let image = MemoryImage::default()
            .with_writes(borrowed(&writes))
            .unwrap();
        assert!(image.runs() <= MAX_RUNS_ADDED, "{} runs", image.runs());
        let len = 1000 * 20 * page;
        let mut copied = vec![0; len];
        image.copy_into(&mut copied).unwrap();
        assert_eq!(copied, expected(len, &[&writes]));
    }

    #[test]
    fn a_sealed_file_refuses_writes() {
        let image = MemoryImage::default()
            .with_writes([(0, &[1u8][..])])
            .unwrap();
        let fd = &image.runs[0].file.fd;
        assert!(rustix::io::pwrite(fd, b"x", 0).is_err());
        assert!(rustix::fs::ftruncate(fd, 0).is_err());
    }
}
