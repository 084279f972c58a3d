//! Capability lockfiles: read/write, profile diff and compatible/review/breaking classification (pure).
