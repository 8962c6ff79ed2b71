//! Reading and checking worker kubeconfigs.
