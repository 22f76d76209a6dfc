//! Attaches a filesystem image to a free loop device (the kernel's `/dev/loop-control`), so that
//! it can be mounted; the device detaches itself once its filesystem is unmounted.

use std::{
    fs::{File, OpenOptions},
    os::fd::AsRawFd,
    path::PathBuf,
};

use anyhow::{Context, bail};
use linux_raw_sys::loop_device::{
    LO_FLAGS_AUTOCLEAR, LOOP_CLR_FD, LOOP_CTL_GET_FREE, LOOP_SET_DIRECT_IO, LOOP_SET_FD,
    LOOP_SET_STATUS64, loop_info64,
};

/// A loop device bound to an image. Mount it before dropping it: once it is closed and
/// unmounted, the kernel releases it (auto-clear).
pub struct LoopDevice {
    device: File,
    pub path: PathBuf,
}

/// How often a free device is asked for when another process takes it first.
const ATTEMPTS: usize = 16;

impl LoopDevice {
    /// Binds `image` (opened read-write) to the first free loop device.
    pub fn attach(image: &File) -> anyhow::Result<Self> {
        let control = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/loop-control")
            .context("opening /dev/loop-control (loop devices are needed for namespace quotas)")?;
        for _ in 0..ATTEMPTS {
            // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
            let number = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
            if number < 0 {
                return Err(std::io::Error::last_os_error())
                    .context("asking for a free loop device");
            }
            let path = PathBuf::from(format!("/dev/loop{number}"));
            let device = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .with_context(|| format!("opening {}", path.display()))?;
            // SAFETY: LOOP_SET_FD takes the descriptor of the backing file, open for the call.
            let bound =
                unsafe { libc::ioctl(device.as_raw_fd(), LOOP_SET_FD as _, image.as_raw_fd()) };
            if bound == 0 {
                let device = LoopDevice { device, path };
                device.configure()?;
                return Ok(device);
            }
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EBUSY) {
                return Err(error).with_context(|| format!("binding {}", path.display()));
            }
        }
        bail!("every free loop device was taken by another process {ATTEMPTS} times in a row")
    }

    /// Auto-clear, and direct I/O where the backing filesystem allows it (the image's pages are
    /// then cached once, not twice: on a Pi the page cache is most of the memory).
    fn configure(&self) -> anyhow::Result<()> {
        let fd = self.device.as_raw_fd();
        // SAFETY: loop_info64 is plain data; all-zero is its "no offset, no limit" state.
        let mut info: loop_info64 = unsafe { std::mem::zeroed() };
        info.lo_flags = LO_FLAGS_AUTOCLEAR as u32;
        // SAFETY: LOOP_SET_STATUS64 reads one loop_info64, which lives across the call.
        if unsafe { libc::ioctl(fd, LOOP_SET_STATUS64 as _, &info) } != 0 {
            let error = std::io::Error::last_os_error();
            // SAFETY: LOOP_CLR_FD takes no argument; it unbinds what LOOP_SET_FD bound.
            unsafe { libc::ioctl(fd, LOOP_CLR_FD as _) };
            return Err(error).with_context(|| format!("configuring {}", self.path.display()));
        }
        // SAFETY: LOOP_SET_DIRECT_IO takes an integer flag; failing leaves buffered I/O.
        unsafe { libc::ioctl(fd, LOOP_SET_DIRECT_IO as _, 1 as libc::c_ulong) };
        Ok(())
    }
}
