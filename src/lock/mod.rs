//! Capability lockfiles: read/write, profile diff and compatible/review/breaking classification (pure).
//!
//! Not built yet: the `lock`, `diff` and `check` commands that will use it do not exist. The module
//! holds the lockfile's place in the layering (below the state that will carry a verdict, above
//! the profiles it compares); it exports nothing.
