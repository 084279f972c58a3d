//! Safe probes that check one card claim each and record evidence (I/O).
//!
//! Not built yet: no open issue covers probes (DESIGN.md's `probe` command). The module exists so
//! the layout matches DESIGN.md; it exports nothing. Runtime evidence (refused streams) is already
//! recorded on `profile::snapshot::IntegrationState`.
