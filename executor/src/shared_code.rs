//! Loaded code by upload: every container whose /init carries the same code text shares one
//! decoded, verified and compiled (or deserialized) module, loaded once, freed with the last
//! container that holds it. Uploads are matched byte for byte, never by a hash alone; each
//! text is hashed once, when its /init arrives.

use std::{
    hash::BuildHasher,
    sync::{Arc, Mutex, MutexGuard, OnceLock, Weak},
};

use bytes::Bytes;
use foldhash::fast::FixedState;
use hashbrown::{HashTable, hash_table::Entry};

use crate::error::ServiceError;

/// The uploads held by live containers, by their exact code text. `binary: false` reads the
/// same text differently (as WebAssembly text or a refusal), so it has a map of its own, and so
/// do the init documents of actions that run on a language engine (`language.rs`) and the
/// state files of actions pre-initialised ahead of time.
pub struct SharedCode<T> {
    index: Arc<Index<T>>,
}

/// Entries of the index: the text's hash (kept, so nothing is hashed twice), the text, its upload.
type ByText<T> = HashTable<IndexEntry<T>>;

struct IndexEntry<T> {
    hash: u64,
    text: Bytes,
    upload: Weak<Upload<T>>,
}

/// The maps of the index: code sent with `binary: false`, other code, engine init documents,
/// engine state files (as their code text).
const TEXT: usize = 0;
const ENCODED: usize = 1;
const ENGINE_DOCUMENTS: usize = 2;
const ENGINE_STATES: usize = 3;
const MAPS: usize = 4;

struct Index<T> {
    hasher: FixedState,
    /// `[as sent with binary: false, otherwise, engine init documents, engine states]`.
    maps: Mutex<[ByText<T>; MAPS]>,
}

/// One upload's code text and, once loaded, its module (or why it does not load). Containers
/// hold it; the index only points to it.
pub struct Upload<T> {
    /// The code text, UTF-8 (it arrived as a JSON string).
    text: Bytes,
    /// The text's hash and map in the index, to find its entry again when it goes.
    hash: u64,
    map: usize,
    index: Arc<Index<T>>,
    loaded: OnceLock<Result<Arc<T>, ServiceError>>,
}

impl<T> Index<T> {
    fn maps(&self) -> MutexGuard<'_, [ByText<T>; MAPS]> {
        self.maps.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> SharedCode<T> {
    /// An empty index whose hashing is seeded with `seed` (random per process: nobody outside
    /// can line up uploads in one bucket).
    pub fn new(seed: u64) -> Self {
        SharedCode {
            index: Arc::new(Index {
                hasher: FixedState::with_seed(seed),
                maps: Mutex::new(std::array::from_fn(|_| HashTable::new())),
            }),
        }
    }

    /// The upload of this code text: the one a live container holds, else a new one, not yet
    /// loaded, which keeps the text where it lies in `body` (the /init's body) when it does.
    pub fn upload(&self, text: &str, body: &Bytes, binary: Option<bool>) -> Arc<Upload<T>> {
        let map = if binary == Some(false) { TEXT } else { ENCODED };
        self.upload_in(map, text, || held_text(text, body))
    }

    /// The upload of an engine's init document (see `language.rs`).
    pub fn upload_document(&self, document: String) -> Arc<Upload<T>> {
        let text = Bytes::from(document);
        let held = text.clone();
        // The text was built from a String: it is UTF-8.
        let text = std::str::from_utf8(&text).unwrap_or_default();
        self.upload_in(ENGINE_DOCUMENTS, text, || held)
    }

    /// The upload of an action's state file, by the code text it arrived as.
    pub fn upload_state(&self, text: &str, body: &Bytes) -> Arc<Upload<T>> {
        self.upload_in(ENGINE_STATES, text, || held_text(text, body))
    }

    /// The upload of a state file that a live container holds, found by its code text: a
    /// further container of such an action decodes nothing.
    pub fn find_state(&self, text: &str) -> Option<Arc<Upload<T>>> {
        let hash = self.index.hasher.hash_one(text.as_bytes());
        let maps = self.index.maps();
        maps[ENGINE_STATES]
            .find(hash, |entry| entry.text == text.as_bytes())
            .and_then(|entry| entry.upload.upgrade())
    }

    fn upload_in(&self, map: usize, text: &str, held: impl FnOnce() -> Bytes) -> Arc<Upload<T>> {
        let hash = self.index.hasher.hash_one(text.as_bytes());
        let mut maps = self.index.maps();
        let same_text = |entry: &IndexEntry<T>| entry.text == text.as_bytes();
        let entry = maps[map].entry(hash, same_text, |entry| entry.hash);
        if let Entry::Occupied(found) = &entry
            && let Some(upload) = found.get().upload.upgrade()
        {
            return upload;
        }
        let text = held();
        let upload = Arc::new(Upload {
            text: text.clone(),
            hash,
            map,
            index: Arc::clone(&self.index),
            loaded: OnceLock::new(),
        });
        let indexed = IndexEntry {
            hash,
            text,
            upload: Arc::downgrade(&upload),
        };
        // An entry whose upload is going (its last holder is dropping it) is taken over.
        match entry {
            Entry::Occupied(mut dead) => *dead.get_mut() = indexed,
            Entry::Vacant(vacant) => {
                vacant.insert(indexed);
            }
        }
        upload
    }

    /// Distinct uploads that live containers (or /inits in progress) hold.
    pub fn len(&self) -> usize {
        self.index.maps().iter().map(HashTable::len).sum()
    }

    /// Whether no upload is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Bodies from this size on arrive in several reads, which the HTTP layer joins into a buffer
/// of their own; a smaller body may be a slice of the connection's read buffer (up to about
/// 400 KiB in hyper), which a held slice would keep whole.
const HELD_BODY_MIN_BYTES: usize = 1 << 20;

/// `text` as a slice of `body` that keeps the body alive, when it lies in it (base64 has
/// nothing JSON escapes, so it always does) and is most of a body of its own; else a copy
/// (text unescaped by the JSON parser, a body padded with other fields, or a small one: a
/// container must keep no more than its code).
fn held_text(text: &str, body: &Bytes) -> Bytes {
    let start = text.as_ptr() as usize;
    let body_start = body.as_ptr() as usize;
    let inside = start >= body_start && start + text.len() <= body_start + body.len();
    if inside && body.len() >= HELD_BODY_MIN_BYTES && text.len() >= body.len() / 2 {
        body.slice_ref(text.as_bytes())
    } else {
        Bytes::copy_from_slice(text.as_bytes())
    }
}

impl<T> Upload<T> {
    /// Whether `binary: false` came with the text.
    pub fn binary(&self) -> Option<bool> {
        (self.map == TEXT).then_some(false)
    }

    /// The module, when an earlier /init loaded it.
    pub fn loaded(&self) -> Option<Result<Arc<T>, ServiceError>> {
        self.loaded.get().cloned()
    }

    /// The module, loaded by `load` unless an earlier /init did; an /init of the same upload
    /// that arrives meanwhile waits for this load instead of loading again. Blocking.
    pub fn load(
        &self,
        load: impl FnOnce(&str, Option<bool>) -> Result<T, ServiceError>,
    ) -> Result<Arc<T>, ServiceError> {
        self.loaded
            .get_or_init(|| {
                let text = std::str::from_utf8(&self.text)
                    .map_err(|_| ServiceError::Internal("an upload's text is not UTF-8".into()))?;
                load(text, self.binary()).map(Arc::new)
            })
            .clone()
    }
}

impl<T> Drop for Upload<T> {
    /// Leaves the index with the last holder, unless a newer upload of the same text took the
    /// entry meanwhile (the entry is this upload's when it points here).
    fn drop(&mut self) {
        let dropped: *const Upload<T> = self;
        let mut maps = self.index.maps();
        if let Ok(entry) = maps[self.map].find_entry(self.hash, |entry| {
            std::ptr::eq(entry.upload.as_ptr(), dropped)
        }) {
            entry.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_load_per_text_while_a_holder_lives() {
        let shared: SharedCode<String> = SharedCode::new(7);
        let loads = std::cell::Cell::new(0);
        let load = |text: &str, _: Option<bool>| {
            loads.set(loads.get() + 1);
            Ok(text.to_uppercase())
        };
        let first = shared.upload("abc", &Bytes::new(), None);
        assert_eq!(*first.load(load).unwrap(), "ABC");
        let second = shared.upload("abc", &Bytes::new(), Some(true));
        assert!(Arc::ptr_eq(&first, &second), "the same upload");
        assert_eq!(*second.load(load).unwrap(), "ABC");
        assert_eq!(loads.get(), 1, "loaded once");
        let text = shared.upload("abc", &Bytes::new(), Some(false));
        assert!(
            !Arc::ptr_eq(&first, &text),
            "binary: false is another reading"
        );
        assert_eq!(shared.len(), 2);
        drop((first, text));
        assert_eq!(shared.len(), 1, "the second holder keeps it");
        drop(second);
        assert_eq!(shared.len(), 0, "freed with the last holder");
        let again = shared.upload("abc", &Bytes::new(), None);
        assert!(again.loaded().is_none(), "loaded afresh");
    }

    #[test]
    fn a_failed_load_is_shared_by_its_waiters_and_retried_later() {
        let shared: SharedCode<()> = SharedCode::new(7);
        let failing = |_: &str, _: Option<bool>| Err(ServiceError::InitFailed("no".into()));
        let upload = shared.upload("x", &Bytes::new(), None);
        assert!(upload.load(failing).is_err());
        assert!(matches!(upload.loaded(), Some(Err(_))));
        drop(upload);
        let retry = shared.upload("x", &Bytes::new(), None);
        assert!(retry.load(|_, _| Ok(())).is_ok());
    }

    #[test]
    fn a_dropped_old_upload_leaves_a_newer_entry_alone() {
        let shared: SharedCode<()> = SharedCode::new(7);
        let old = shared.upload("y", &Bytes::new(), None);
        // The index entry is replaced only when dead; emulate a replacement racing the drop.
        let newer = Arc::new(Upload {
            text: Bytes::from_static(b"y"),
            hash: old.hash,
            map: 1,
            index: Arc::clone(&shared.index),
            loaded: OnceLock::new(),
        });
        let entry = shared.index.maps()[1]
            .find_mut(old.hash, |entry| entry.text == "y")
            .map(|entry| entry.upload = Arc::downgrade(&newer));
        assert!(entry.is_some());
        drop(old);
        assert!(Arc::ptr_eq(
            &shared.upload("y", &Bytes::new(), None),
            &newer
        ));
    }

    #[test]
    fn text_in_the_body_is_kept_there_and_other_text_copied() {
        let shared: SharedCode<()> = SharedCode::new(7);
        let code = "QUJD".repeat(HELD_BODY_MIN_BYTES / 4);
        let body = Bytes::from(format!(r#"{{"value":{{"code":"{code}"}}}}"#));
        let text = std::str::from_utf8(&body[18..18 + code.len()]).unwrap();
        let held = shared.upload(text, &body, None);
        assert_eq!(held.text.as_ptr(), text.as_ptr(), "a slice of the body");
        let same = shared.upload(&code, &Bytes::new(), None);
        assert!(Arc::ptr_eq(&held, &same), "matched by content");
        // Code that is not most of its body, or in a small body, is copied: nothing else of
        // the body is kept.
        let padded = Bytes::from(format!(r#"{{"code":"QUJD","pad":"{code}"}}"#));
        let small = std::str::from_utf8(&padded[9..13]).unwrap();
        let copied = shared.upload(small, &padded, None);
        assert_eq!(&copied.text[..], b"QUJD");
        assert_ne!(copied.text.as_ptr(), small.as_ptr());
        let little = Bytes::from_static(br#"{"value":{"code":"QUJF"}}"#);
        let text = std::str::from_utf8(&little[18..22]).unwrap();
        assert_ne!(
            shared.upload(text, &little, None).text.as_ptr(),
            text.as_ptr()
        );
        let elsewhere = shared.upload("(module)", &body, Some(false));
        assert_eq!(&elsewhere.text[..], b"(module)");
        assert_ne!(elsewhere.text.as_ptr(), body.as_ptr());
    }
}
