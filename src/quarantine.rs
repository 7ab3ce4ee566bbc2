//! What a command created where nothing may be created (DESIGN §4): run-later files and
//! ground-link's own state that did not exist before an `exec_cmd` ran (`~/.bash_profile`,
//! `.config/systemd/user/x.service`, a browser's native-host manifest, a project's `.envrc`,
//! `sub/.git/hooks/…`). A mount can only cover a path that exists, and placeholder files
//! would change how the person's programs start, so these are found afterwards instead.
//!
//! Guarantees:
//! - The "before" is the root scan the namespace was built from plus the fixed places that
//!   were absent; the "after" is the same scan and the same places once the command's whole
//!   process tree is gone (its PID namespace died with it), so nothing of the command is left
//!   to recreate what is moved.
//! - Every new protected path (the topmost one of a new folder) is moved into
//!   `<data dir>/quarantine/<call id>/`, ground-link's own state, hidden from every later
//!   command; where it cannot be moved it is deleted; each outcome is said in the result and
//!   the audit line.

use std::path::{Path, PathBuf};

use crate::protect::{Protection, RootScan, ScanLimit};

/// Protected paths before the command: those that exist (from the root scan, and the fixed
/// places as they are now: the engine itself may just have written the project's rule file
/// for "allow for this project") and the fixed places that do not.
#[derive(Debug, Clone, Default)]
pub struct Before {
    existing: Vec<PathBuf>,
    absent: Vec<PathBuf>,
}

impl Before {
    pub fn new(prot: &Protection, root: &Path, scan: &RootScan) -> Before {
        let (present, absent): (Vec<PathBuf>, Vec<PathBuf>) = prot
            .fixed_places(root)
            .into_iter()
            .partition(|p| std::fs::symlink_metadata(p).is_ok());
        let mut existing: Vec<PathBuf> = scan
            .protected
            .iter()
            .chain(&scan.own_state)
            .cloned()
            .collect();
        existing.extend(present);
        existing.sort();
        existing.dedup();
        Before { existing, absent }
    }
}

/// Protected paths that exist now and did not before: only the topmost of a new folder.
pub fn created_since(
    prot: &Protection,
    root: &Path,
    before: &Before,
    limit: ScanLimit,
) -> Vec<PathBuf> {
    let after = prot.project_protected_in(root, limit);
    let mut new: Vec<PathBuf> = after
        .into_iter()
        .filter(|p| before.existing.binary_search(p).is_err())
        .chain(
            before
                .absent
                .iter()
                .filter(|p| std::fs::symlink_metadata(p).is_ok())
                .cloned(),
        )
        .collect();
    new.sort();
    new.dedup();
    let topmost: Vec<PathBuf> = new
        .iter()
        .filter(|p| !new.iter().any(|q| q != *p && p.starts_with(q)))
        .cloned()
        .collect();
    topmost
}

/// What became of one new path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Moved(PathBuf),
    Deleted,
    Left(String),
}

/// Moves each path into `dir`, keeping its absolute layout below it (`dir/home/u/.envrc`).
pub fn move_away(paths: &[PathBuf], dir: &Path) -> Vec<(PathBuf, Fate)> {
    paths
        .iter()
        .map(|p| (p.clone(), move_one(p, dir)))
        .collect()
}

fn move_one(p: &Path, dir: &Path) -> Fate {
    let rel = p.strip_prefix("/").unwrap_or(p);
    let dest = dir.join(rel);
    let moved = dest
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::rename(p, &dest));
    if moved.is_ok() {
        return Fate::Moved(dest);
    }
    // Another file system (EXDEV) or a full disk: the path must still not stay.
    let removed = match std::fs::symlink_metadata(p) {
        Ok(md) if md.is_dir() => std::fs::remove_dir_all(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) => Err(e),
    };
    match removed {
        Ok(()) => Fate::Deleted,
        Err(e) => Fate::Left(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_keep_the_layout_and_only_topmost_paths_count() {
        let base = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(base.path()).unwrap().join("home");
        let paths = crate::paths::ConfigPaths::under(&base.path().join("cfg"));
        std::fs::create_dir_all(home.join("proj/sub")).unwrap();
        let prot = Protection::new(&paths, Some(&home));
        let root = home.clone();
        let scan = prot.scan_root(&root, ScanLimit::default());
        let before = Before::new(&prot, &root, &scan);
        std::fs::create_dir_all(home.join("proj/sub/.git/hooks")).unwrap();
        std::fs::write(home.join("proj/sub/.git/hooks/pre-commit"), "x").unwrap();
        std::fs::write(home.join(".bash_profile"), "x").unwrap();
        std::fs::write(home.join("proj/ok.txt"), "x").unwrap();
        let new = created_since(&prot, &root, &before, ScanLimit::default());
        assert_eq!(
            new,
            vec![home.join(".bash_profile"), home.join("proj/sub/.git")]
        );
        let q = base.path().join("q");
        let fates = move_away(&new, &q);
        for (p, fate) in &fates {
            assert!(!p.exists(), "{}", p.display());
            assert!(matches!(fate, Fate::Moved(d) if d.starts_with(&q) && d.exists()));
        }
        assert!(home.join("proj/ok.txt").exists());
    }
}
