//! The pages of a private mapping that an instance changed: those now holding anonymous memory
//! of their own (written, or copied on write from a file), resident or swapped out, found with
//! Linux's `PAGEMAP_SCAN` (6.7 and newer) in one walk of the page tables.

use std::{fs::File, io, ops::Range, sync::OnceLock};

use linux_raw_sys::general::{
    PAGE_IS_FILE, PAGE_IS_PFNZERO, PAGE_IS_PRESENT, PAGE_IS_SWAPPED, page_region, pm_scan_arg,
};
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode, opcode};

/// Ranges one scan reports; a memory with more is scanned again from where it stopped.
const REGIONS_PER_SCAN: usize = 64;

/// This process's page map, opened once (`None` where it cannot be).
fn pagemap() -> Option<&'static File> {
    static PAGEMAP: OnceLock<Option<File>> = OnceLock::new();
    PAGEMAP
        .get_or_init(|| File::open("/proc/self/pagemap").ok())
        .as_ref()
}

/// The changed page ranges of `[start, start + len)` (addresses, ascending), or an error where
/// the kernel cannot tell (then every page has to be taken as changed).
pub fn changed(start: usize, len: usize) -> io::Result<Vec<Range<usize>>> {
    let pagemap = pagemap().ok_or_else(|| io::Error::other("no /proc/self/pagemap"))?;
    let end = start + len;
    let mut found = Vec::new();
    let mut from = start;
    while from < end {
        let mut regions = [page_region {
            start: 0,
            end: 0,
            categories: 0,
        }; REGIONS_PER_SCAN];
        let mut arg = pm_scan_arg {
            size: size_of::<pm_scan_arg>() as u64,
            flags: 0,
            start: from as u64,
            end: end as u64,
            walk_end: 0,
            vec: regions.as_mut_ptr() as u64,
            vec_len: REGIONS_PER_SCAN as u64,
            max_pages: 0,
            // Neither a page of the file the mapping maps nor the shared zero page…
            category_inverted: u64::from(PAGE_IS_FILE | PAGE_IS_PFNZERO),
            category_mask: u64::from(PAGE_IS_FILE | PAGE_IS_PFNZERO),
            // …but memory of its own, in RAM or in swap.
            category_anyof_mask: u64::from(PAGE_IS_PRESENT | PAGE_IS_SWAPPED),
            return_mask: 0,
        };
        // SAFETY: the argument describes `regions`, which outlives the call, and an address
        // range the kernel only reads the page tables of.
        let count = unsafe { rustix::ioctl::ioctl(pagemap, Scan(&mut arg)) }?;
        found.extend(
            regions[..count]
                .iter()
                .map(|r| r.start as usize..r.end as usize),
        );
        let walked = arg.walk_end as usize;
        if walked <= from {
            return Err(io::Error::other("the page-map scan made no progress"));
        }
        from = walked;
    }
    Ok(found)
}

/// `PAGEMAP_SCAN`'s argument, updated by the kernel (`walk_end`), answering the regions found.
struct Scan<'a>(&'a mut pm_scan_arg);

// SAFETY: the opcode is `_IOWR('f', 16, struct pm_scan_arg)`, the pointer is to that struct,
// and the output is the count of regions the kernel wrote.
unsafe impl Ioctl for Scan<'_> {
    type Output = usize;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        opcode::read_write::<pm_scan_arg>(b'f', 16)
    }

    fn as_ptr(&mut self) -> *mut std::ffi::c_void {
        (self.0 as *mut pm_scan_arg).cast()
    }

    unsafe fn output_from_ptr(
        out: IoctlOutput,
        _: *mut std::ffi::c_void,
    ) -> rustix::io::Result<usize> {
        Ok(out as usize)
    }
}
