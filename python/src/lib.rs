//! The native module of the `convstream` Python package (`convstream._convstream`): filters
//! for arrays ([`filter`]), decoded video as an iterator and `run` ([`video`]), and the mask
//! catalogue. The public API, its argument checks and the arrays of NumPy, CuPy and PyTorch
//! live in python/convstream/__init__.py; this side takes planes by address and releases the
//! GIL while it works.

mod filter;
mod settings;
mod video;

use convstream_core::mask::{Mask, MaskMode, MaskParams, PRESETS};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _convstream,
    GpuUnavailableError,
    PyRuntimeError,
    "No usable GPU (or CUDA support not built in): the message is the one `convstream run --device cuda` prints."
);

/// The presets `convstream masks` lists: `(name, keys, summary)` each.
#[pyfunction]
fn presets() -> Vec<(String, Vec<String>, String)> {
    PRESETS
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                p.keys.iter().map(|k| k.to_string()).collect(),
                p.summary.to_string(),
            )
        })
        .collect()
}

/// What `convstream masks SPEC`... `convstream masks show SPEC` prints: the matrix, the taps as
/// written for `mode=correlate`, and warnings.
#[pyfunction]
fn show_mask(spec: &str) -> PyResult<String> {
    let refused = |errors: Vec<convstream_core::mask::MaskError>| {
        let lines: Vec<String> = errors.iter().map(|e| format!("mask {spec:?}: {e}")).collect();
        PyValueError::new_err(lines.join("\n"))
    };
    let params = MaskParams::parse_spec(spec).map_err(refused)?;
    let mask = Mask::build(&params, None).map_err(refused)?;
    let mut text = format!("{mask}\n");
    if params.mode == Some(MaskMode::Correlate) && !mask.is_magnitude() {
        text.push_str("as written (mode=correlate: slid over the picture unflipped, as FFmpeg and OpenCV do):\n");
        for row in mask.correlation_taps().chunks(mask.width()) {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:>11.6}")).collect();
            text.push_str(&format!("  {}\n", cells.join(" ")));
        }
    }
    for warning in mask.warnings() {
        text.push_str(&format!("warning: {warning}\n"));
    }
    Ok(text)
}

/// A mask's coefficients in convolution orientation (as `scipy.ndimage.convolve` takes
/// them), rows of floats, with its bias in 8-bit units, whether it is separable (rank one,
/// filtered in a row and a column pass) and its description: `(rows, bias, separable,
/// description)`.
#[pyfunction]
fn mask_coefficients(spec: &str) -> PyResult<(Vec<Vec<f32>>, f32, bool, String)> {
    let mask = Mask::from_spec(spec).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("mask {spec:?}: {e}")).collect();
        PyValueError::new_err(lines.join("\n"))
    })?;
    let rows = mask.coefficients().chunks(mask.width()).map(<[f32]>::to_vec).collect();
    Ok((rows, mask.bias(), mask.is_separable(), mask.description().to_string()))
}

/// Waits (at most 3 s, the GIL released) for GPU set-up threads still at work, as the
/// command line does before it exits: called at interpreter exit, because a process that
/// exits while a thread is inside the driver's initialisation can be aborted by it.
#[pyfunction]
fn wait_for_gpu_starts(py: Python<'_>) -> bool {
    py.detach(|| convstream_core::engine::wait_for_gpu_starts(std::time::Duration::from_secs(3)))
}

#[pymodule]
fn _convstream(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GpuUnavailableError", m.py().get_type::<GpuUnavailableError>())?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(show_mask, m)?)?;
    m.add_function(wrap_pyfunction!(mask_coefficients, m)?)?;
    m.add_function(wrap_pyfunction!(wait_for_gpu_starts, m)?)?;
    m.add_class::<filter::NativeFilter>()?;
    video::register(m)?;
    m.add("CUDA_BUILT", cfg!(feature = "cuda"))?;
    Ok(())
}
