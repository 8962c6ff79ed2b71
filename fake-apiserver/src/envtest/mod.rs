//! The fake in envtest's place: started under the names `kube-apiserver` and `etcd` (links to the
//! `fake-apiserver` binary in a `KUBEBUILDER_ASSETS` folder), it reads the flags envtest starts
//! those programs with, and serves as they would. `cargo xtask envtest-assets` makes the folder.

pub mod etcd;
pub mod flags;
pub mod kube_apiserver;

/// Which program the binary was started as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    FakeApiServer,
    KubeApiServer,
    Etcd,
}

impl Role {
    /// From `argv[0]`: its file name decides, as for a busybox-style binary.
    pub fn from_program_name(argv0: &str) -> Role {
        let name = std::path::Path::new(argv0)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        match name {
            "kube-apiserver" => Role::KubeApiServer,
            "etcd" => Role::Etcd,
            _ => Role::FakeApiServer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_name_picks_the_role() {
        assert_eq!(
            Role::from_program_name("/assets/kube-apiserver"),
            Role::KubeApiServer
        );
        assert_eq!(Role::from_program_name("etcd"), Role::Etcd);
        assert_eq!(
            Role::from_program_name("target/debug/fake-apiserver"),
            Role::FakeApiServer
        );
        assert_eq!(Role::from_program_name("etcdctl"), Role::FakeApiServer);
    }
}
