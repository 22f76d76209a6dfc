//! Per-namespace quotas for directory grants. Each namespace's directory (`DIR_ROOT/<namespace>`)
//! is the root of an ext4 filesystem of its own, stored in the image
//! `DIR_ROOT/.images/<namespace>.ext4` of `--dir-quota-mb` bytes with room for `--dir-quota-files`
//! files, and mounted at the namespace's first grant in the executor's private mount namespace.
//! A tenant that fills its grants gets ENOSPC in its guest, on every backend, from the kernel;
//! the host's disk never holds more of a namespace than its image, and an image is only created
//! when the disk has room for it beside what every other image may still grow to. The mounts
//! exist only in the executor's mount namespace: they disappear with the process however it ends,
//! and outside it `/proc/<pid>/root/DIR_ROOT/<namespace>` shows them.

use std::{
    collections::HashSet,
    fs::{File, OpenOptions},
    os::{
        fd::{AsRawFd, OwnedFd},
        unix::fs::{MetadataExt, OpenOptionsExt},
    },
    path::{Path, PathBuf},
    process::Command,
    sync::{Arc, Mutex},
};

use anyhow::Context;
use rustix::{
    fs::{Mode, OFlags},
    mount::{MountFlags, MountPropagationFlags},
};

use crate::loop_device::LoopDevice;

/// What grants may hold per namespace.
#[derive(Debug, Clone, Copy)]
pub struct Quota {
    pub bytes: u64,
    pub files: u64,
}

/// Where grants are written, as the operator's configuration and the executor's privileges allow.
pub enum Volumes {
    /// Quotas are off (`--dir-quota-mb 0`): grants write to the grant root's filesystem.
    Unbounded,
    /// Quotas are on but this process cannot mount: every grant is refused, saying why.
    Unavailable(String),
    /// Every namespace's grants live on a filesystem of the quota's size.
    Enforced(Arc<Enforced>),
}

pub struct Enforced {
    root: PathBuf,
    images: PathBuf,
    quota: Quota,
    /// Held locked for the process's life: two executors mounting one image would corrupt it.
    _lock: File,
    /// Namespaces whose filesystem is mounted (they stay so until the process ends); held only
    /// to look or insert, so that an async worker asking never waits on a mount.
    mounted: Mutex<HashSet<String>>,
    /// Held while one namespace's filesystem is made and mounted.
    mounting: Mutex<()>,
}

/// Inodes ext4 reserves for itself (`EXT4_GOOD_OLD_FIRST_INO`), added to the operator's count.
const RESERVED_INODES: u64 = 11;

/// From this image size on, the journal is kept at 4 MiB instead of ext4's default.
const SMALL_JOURNAL_FROM: u64 = 64 << 20;

/// Where the images lie; no namespace name starts with a dot, so none is ever called this.
const IMAGES: &str = ".images";

/// Gives this process a mount namespace of its own whose mounts never propagate to the host's
/// (while the host's still reach it). Call before any thread starts.
pub fn isolate_mounts() -> Result<(), String> {
    // SAFETY: only NEWNS is unshared, before any other thread exists.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }
        .map_err(|e| format!("cannot create a mount namespace of its own ({e}); it needs CAP_SYS_ADMIN, e.g. to run as root"))?;
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )
    .map_err(|e| format!("cannot keep its mounts from the host's mount namespace ({e})"))
}

impl Volumes {
    /// The volumes of `root` (the grant root, a private directory) under `quota`, given whether
    /// [`isolate_mounts`] succeeded; `None` turns quotas off.
    pub fn new(
        root: &Path,
        quota: Option<Quota>,
        isolated: Result<(), String>,
    ) -> anyhow::Result<Self> {
        let Some(quota) = quota else {
            tracing::warn!(
                "directory grants have no quota (--dir-quota-mb 0): a tenant can fill the disk of {}",
                root.display()
            );
            return Ok(Volumes::Unbounded);
        };
        if let Err(why) = isolated {
            tracing::warn!(
                "directory grants are refused: the executor {why}; run it privileged or turn quotas off with --dir-quota-mb 0"
            );
            return Ok(Volumes::Unavailable(why));
        }
        let images = root.join(IMAGES);
        crate::state::private_dir(&images)?;
        let lock = lock_images(&images)?;
        Ok(Volumes::Enforced(Arc::new(Enforced {
            root: root.to_path_buf(),
            images,
            quota,
            _lock: lock,
            mounted: Mutex::new(HashSet::new()),
            mounting: Mutex::new(()),
        })))
    }

    /// Makes sure `namespace`'s directory is its own filesystem (creating and mounting it at
    /// the first grant); a failure is the text /init answers with.
    pub async fn prepare(&self, namespace: &str) -> Result<(), String> {
        match self {
            Volumes::Unbounded => Ok(()),
            Volumes::Unavailable(why) => Err(format!(
                "directory grants need per-namespace quotas, which this executor cannot enforce: it {why} \
                 (the operator runs it privileged, or turns quotas off with --dir-quota-mb 0)"
            )),
            Volumes::Enforced(enforced) => {
                if enforced.is_mounted(namespace) {
                    return Ok(());
                }
                let enforced = Arc::clone(enforced);
                let namespace = namespace.to_owned();
                tokio::task::spawn_blocking(move || enforced.mount(&namespace))
                    .await
                    .map_err(|e| format!("preparing the namespace's directory failed: {e}"))?
                    .map_err(|e| format!("cannot prepare the namespace's directory: {e:#}"))
            }
        }
    }
}

impl Enforced {
    fn is_mounted(&self, namespace: &str) -> bool {
        locked(&self.mounted).contains(namespace)
    }

    /// Creates `namespace`'s image if it has none and mounts it on its directory. One at a time:
    /// a namespace's first /inits may race, and each must find it mounted once.
    fn mount(&self, namespace: &str) -> anyhow::Result<()> {
        let _one_at_a_time = locked(&self.mounting);
        if self.is_mounted(namespace) {
            return Ok(());
        }
        let root = rustix::fs::open(
            &self.root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("opening {}", self.root.display()))?;
        let directory = crate::capability::dir::open_or_create(&root, namespace.as_ref())
            .map_err(anyhow::Error::msg)
            .context("the namespace's directory")?;
        let image_path = self.images.join(format!("{namespace}.ext4"));
        if !image_path.exists() {
            self.create_image(&image_path, &directory)?;
        }
        let image = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&image_path)
            .with_context(|| format!("opening {}", image_path.display()))?;
        let device = LoopDevice::attach(&image)?;
        rustix::mount::mount(
            &device.path,
            fd_path(&directory),
            "ext4",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::NOATIME,
            None,
        )
        .with_context(|| {
            format!(
                "mounting {} ({})",
                image_path.display(),
                device.path.display()
            )
        })?;
        let top = rustix::fs::openat(
            &root,
            namespace,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .context("opening the mounted filesystem")?;
        rustix::fs::fchmod(&top, Mode::from_raw_mode(0o700)).context("making it private")?;
        // mkfs's lost+found is no grant of the namespace's (e2fsck makes it again if it needs it).
        let _ = rustix::fs::unlinkat(&top, "lost+found", rustix::fs::AtFlags::REMOVEDIR);
        tracing::info!(namespace, image = %image_path.display(), bytes = self.quota.bytes, files = self.quota.files, "namespace directory mounted");
        locked(&self.mounted).insert(namespace.to_owned());
        Ok(())
    }

    /// Makes an ext4 image of the quota's size, carrying over what the namespace's directory
    /// already holds (files granted before quotas were turned on).
    fn create_image(&self, image_path: &Path, directory: &OwnedFd) -> anyhow::Result<()> {
        self.check_room()?;
        let partial = image_path.with_extension("ext4.partial");
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&partial)
            .with_context(|| format!("creating {}", partial.display()))?;
        file.set_len(self.quota.bytes)
            .with_context(|| format!("sizing {}", partial.display()))?;
        drop(file);
        let inodes = self.quota.files + RESERVED_INODES;
        let owner = format!(
            "root_owner={}:{},nodiscard",
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw()
        );
        let mut mkfs = mkfs_command();
        mkfs.args([
            "-q",
            "-F",
            "-m",
            "0",
            "-N",
            &inodes.to_string(),
            "-E",
            &owner,
        ]);
        if self.quota.bytes >= SMALL_JOURNAL_FROM {
            // mkfs writes the journal out at once: ext4's default is 16 to 64 MiB at these
            // sizes, taken from the disk before the tenant writes a byte.
            mkfs.args(["-J", "size=4"]);
        }
        let existing = fd_path(directory);
        if std::fs::read_dir(&existing).is_ok_and(|mut entries| entries.next().is_some()) {
            // The child reads the directory through this process's descriptor.
            mkfs.arg("-d").arg(format!(
                "/proc/{}/fd/{}",
                std::process::id(),
                directory.as_raw_fd()
            ));
        }
        let output = mkfs.arg(&partial).output();
        let made = match output {
            Ok(output) if output.status.success() => Ok(()),
            Ok(output) => Err(anyhow::anyhow!(
                "mkfs.ext4 failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(e) => Err(anyhow::Error::new(e).context("running mkfs.ext4 (from e2fsprogs)")),
        };
        if let Err(error) = made {
            let _ = std::fs::remove_file(&partial);
            return Err(error);
        }
        std::fs::rename(&partial, image_path)
            .with_context(|| format!("renaming {}", partial.display()))
    }

    /// Refuses a new image when the disk could not hold it beside what the existing images may
    /// still grow to (they are sparse: a namespace's image takes only what it holds).
    fn check_room(&self) -> anyhow::Result<()> {
        let stat = rustix::fs::statvfs(&self.images).context("reading the disk's free space")?;
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        let mut promised = 0u64;
        for entry in std::fs::read_dir(&self.images)? {
            let meta = entry?.metadata()?;
            promised += meta.len().saturating_sub(meta.blocks() * 512);
        }
        let needed = promised.saturating_add(self.quota.bytes);
        if free < needed {
            anyhow::bail!(
                "the disk of {} has {} MiB free, and the namespaces' images may still grow by {} MiB: \
                 there is no room for another namespace's {} MiB (free space, or lower --dir-quota-mb)",
                self.images.display(),
                free >> 20,
                promised >> 20,
                self.quota.bytes >> 20
            );
        }
        Ok(())
    }
}

/// A mutex's guard, also after a panic elsewhere (what it guards stays consistent).
fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks the images for this process, or says which other one holds them.
fn lock_images(images: &Path) -> anyhow::Result<File> {
    let path = images.join("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(|_| {
        anyhow::anyhow!(
            "another executor uses the namespaces' filesystems in {} (two would corrupt them): give each its own --dir-root",
            images.display()
        )
    })?;
    Ok(file)
}

/// `mkfs.ext4`, found on PATH or where Debian keeps it (a service's PATH may lack sbin).
fn mkfs_command() -> Command {
    let program = ["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .unwrap_or("mkfs.ext4");
    let mut command = Command::new(program);
    command.stdin(std::process::Stdio::null());
    command
}

/// The path through which this process reaches what `fd` holds, whatever its name is now.
fn fd_path(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}
