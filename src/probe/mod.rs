//! Safe probes that check one card claim each and record evidence (I/O).
