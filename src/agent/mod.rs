//! The bundled reference A2A 1.0 agent, generated from one capability registry (seed 004) (I/O).
