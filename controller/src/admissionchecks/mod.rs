//! Admission check controllers: the second phase of admission, after quota.

pub mod provisioning;
