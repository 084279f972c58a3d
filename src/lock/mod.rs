//! Capability lockfiles: read/write, profile diff and compatible/review/breaking classification (pure).
//!
//! Not built yet: no open issue covers the lockfile (DESIGN.md's `lock`, `diff`, `check` commands).
//! The module exists so the layout matches DESIGN.md; it exports nothing.
