//! Generates the A2A 0.3 protobuf types (`a2a.v1`: the 0.3 gRPC service's messages) with their
//! ProtoJSON serde from `proto/a2a-v0.3.0.fds`, the descriptor set of the official a2a-sdk 0.3.26's
//! compiled `a2a.proto` (written by `scripts/extract-v03-proto.py`). prost-build reads the set
//! directly (no protoc); well-known types are pbjson-types', as a2a-pb's are.

use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fds_path = "proto/a2a-v0.3.0.fds";
    println!("cargo:rerun-if-changed={fds_path}");
    println!("cargo:rerun-if-changed=build.rs");
    let bytes = std::fs::read(fds_path)?;
    let set = prost_types::FileDescriptorSet::decode(&bytes[..])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = prost_build::Config::new();
    config
        .out_dir(&out)
        .compile_well_known_types()
        .extern_path(".google.protobuf", "::pbjson_types");
    config.compile_fds(set)?;
    let mut json = pbjson_build::Builder::new();
    json.out_dir(&out);
    json.register_descriptors(&bytes)?;
    // Readers ignore members they do not know (A2A §5.7); unknown enum names are still refused.
    json.ignore_unknown_fields();
    json.build(&[".a2a.v1"])?;
    Ok(())
}
