//! Convolution masks: presets, custom matrices, normalisation and separability.
//!
//! A [`Mask`] is what the engines apply: an odd-sized matrix of f32 coefficients in
//! convolution orientation plus a bias, and, when the matrix has rank one, its two
//! 1D factors so that engines can run a row pass and a column pass instead.
//!
//! Here: the modules and what they give the crates above. The `Mask` type and its
//! constructors are in `matrix.rs`, the presets in `presets.rs`, the SPEC grammar's keys in
//! `params.rs`, the errors in `error.rs`, the size limits in `limits.rs`, the catalogue's
//! text (preset list, `masks show`) in `describe.rs`, rank-one factors in `factors.rs`, an
//! integer matrix's whole taps and divisor in `whole.rs`.

mod describe;
mod error;
mod factors;
mod limits;
mod matrix;
mod params;
mod presets;
mod whole;

pub use describe::{preset_list, show_mask, show_spec, SpecRefused};
pub use error::{nearest, MaskError};
pub use limits::MAX_SIDE;
pub use matrix::Mask;
pub use params::{MaskMode, MaskParams};
pub use presets::PRESETS;

#[cfg(test)]
mod tests;
