//! Host arrays as `NativeFilter.filter_host` takes them: the NumPy arrays themselves, never
//! addresses, so a call from Python cannot point the filter at memory no array owns. An
//! array's place in memory is read from NumPy's own `__array_interface__` of an object whose
//! type is exactly `numpy.ndarray` (a subclass, or any other object, could answer with any
//! address); the buffer protocol would say the same, but the wheel is built for the stable
//! ABI of Python 3.9, which leaves it out. Here the arrays' shapes, strides, sample types,
//! writability and separation are checked, and the planes of a call laid out (a source at
//! any strides NumPy gives, read where it is; interleaved channels side by side); memory
//! the filter needs beside them is taken with [`try_zeroed`], which refuses with
//! `MemoryError` instead of ending the process.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

/// How an array's samples are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    U8,
    U16,
    F32,
}

impl Samples {
    /// Bytes a sample takes.
    pub fn bytes(self) -> usize {
        match self {
            Samples::U8 => 1,
            Samples::U16 => 2,
            Samples::F32 => 4,
        }
    }

    /// The sample type of NumPy's type string (`|u1`, `<u2`, `<f4`): native byte order only
    /// (`|` for single bytes, which have none).
    fn of_typestr(typestr: &str) -> Option<Samples> {
        let native = if cfg!(target_endian = "little") { "<" } else { ">" };
        match typestr.split_at_checked(1)? {
            ("|", "u1") => Some(Samples::U8),
            (order, "u1") if order == native => Some(Samples::U8),
            (order, "u2") if order == native => Some(Samples::U16),
            (order, "f4") if order == native => Some(Samples::F32),
            _ => None,
        }
    }
}

/// One NumPy array as NumPy describes it: its first sample's address, shape and strides (in
/// bytes; negative where it runs backwards), and the bytes it spans.
struct HostArray {
    address: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
    samples: Samples,
    readonly: bool,
    /// The lowest byte any sample of it takes.
    low: usize,
    /// Bytes from `low` to just past the highest sample.
    len: usize,
}

impl HostArray {
    /// The array `array`, passed as the argument `name`.
    fn of<'py>(array: &Bound<'py, PyAny>, name: &str) -> PyResult<HostArray> {
        // NumPy's type, looked up once: importing the module on every call took a fifth of a
        // small array's call.
        static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let py = array.py();
        let ndarray = NDARRAY.import(py, "numpy", "ndarray")?;
        if !array.get_type().is(ndarray) {
            return Err(PyTypeError::new_err(format!(
                "{name}: takes a numpy.ndarray, not {}",
                array.get_type().name()?
            )));
        }
        let interface = array.getattr(intern!(py, "__array_interface__"))?;
        let interface = interface.cast::<PyDict>()?;
        let item = |key: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyAny>> {
            interface
                .get_item(key)?
                .ok_or_else(|| PyValueError::new_err(format!("{name}: its __array_interface__ lacks {key:?}")))
        };
        let typestr: String = item(intern!(py, "typestr"))?.extract()?;
        let samples = Samples::of_typestr(&typestr).ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name}: takes native-order uint8, uint16 or float32 samples, not {typestr}"
            ))
        })?;
        let data = item(intern!(py, "data"))?;
        let data = data.cast::<PyTuple>()?;
        let (address, readonly): (usize, bool) = data.extract()?;
        let shape: Vec<usize> = item(intern!(py, "shape"))?.extract()?;
        let too_large = || PyValueError::new_err(format!("{name}: shape {shape:?} is larger than memory"));
        // No strides: C-contiguous, each dimension's stride the product of those after it.
        let strides: Vec<isize> = match item(intern!(py, "strides"))? {
            given if given.is_none() => {
                let mut strides = vec![0isize; shape.len()];
                let mut step = samples.bytes();
                for (stride, n) in strides.iter_mut().zip(&shape).rev() {
                    *stride = isize::try_from(step).map_err(|_| too_large())?;
                    step = step.checked_mul(*n).ok_or_else(too_large)?;
                }
                strides
            }
            given => given.extract()?,
        };
        // The bytes the samples reach below and above the first one.
        let (mut below, mut above) = (0i128, samples.bytes() as i128);
        if shape.contains(&0) {
            above = 0;
        } else {
            for (n, stride) in shape.iter().zip(&strides) {
                let reach = (*n as i128 - 1) * *stride as i128;
                if reach < 0 {
                    below -= reach;
                } else {
                    above += reach;
                }
            }
        }
        let low = (address as i128 - below).max(0);
        let len = usize::try_from(above + below).map_err(|_| too_large())?;
        Ok(HostArray {
            address,
            shape,
            strides,
            samples,
            readonly,
            low: low as usize,
            len,
        })
    }

    /// Whether the two arrays' spans share any byte.
    fn overlaps(&self, other: &HostArray) -> bool {
        self.len > 0 && other.len > 0 && self.low < other.low + other.len && other.low < self.low + self.len
    }

    /// Whether the array is C-contiguous: rows of packed samples one after the other.
    fn contiguous(&self) -> bool {
        let mut step = self.samples.bytes() as isize;
        for (n, stride) in self.shape.iter().zip(&self.strides).rev() {
            if *n > 1 && *stride != step {
                return false;
            }
            step *= *n as isize;
        }
        true
    }
}

/// Where one plane (or the interleaved channels of one image) is read: its first sample's
/// address and the bytes from one row, pixel and channel to the next.
#[derive(Debug, Clone, Copy)]
pub struct SourceAt {
    pub address: usize,
    pub row: isize,
    pub pixel: isize,
    pub channel: isize,
    /// Channels read side by side: all of an H x W x C image's, or one.
    pub channels: usize,
}

/// Where its results go in the output array: the first sample's address, rows `row` bytes
/// apart, pixels `pixel` bytes apart (each pixel's `channels` samples side by side).
#[derive(Debug, Clone, Copy)]
pub struct TargetAt {
    pub address: usize,
    pub row: usize,
    pub pixel: usize,
}

/// The planes of one call: each `(source, target)` is `height x width` pixels, every byte
/// of it inside its array; `source` is the source array's span (lowest byte, length).
pub struct HostPlanes {
    pub height: usize,
    pub width: usize,
    pub samples: Samples,
    pub places: Vec<(SourceAt, TargetAt)>,
    pub source: (usize, usize),
}

/// The planes of `source` to filter into `out`: a 2-D plane, or the `channels` of an image
/// laid out channels last (H x W x C, N x H x W x C) or of planes (C x H x W, N x C x H x W).
/// `source` may be any view NumPy makes (strided, cropped, flipped): it is read where it is.
/// Refuses, naming the argument, anything but two NumPy arrays of one shape and sample type,
/// `out` C-contiguous, writable and apart from `source`, and channels outside the array.
pub fn host_planes(
    source: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    channels: &[usize],
    channels_last: bool,
) -> PyResult<HostPlanes> {
    let from = HostArray::of(source, "source")?;
    let to = HostArray::of(out, "out")?;
    if to.shape != from.shape || to.samples != from.samples {
        return Err(PyValueError::new_err(format!(
            "out: shape {:?} of {:?} samples differs from the source's {:?} of {:?}",
            to.shape, to.samples, from.shape, from.samples
        )));
    }
    if to.readonly {
        return Err(PyValueError::new_err("out: the array is read-only"));
    }
    if !to.contiguous() {
        return Err(PyValueError::new_err("out: the array is not C-contiguous"));
    }
    if from.overlaps(&to) {
        return Err(PyValueError::new_err("out: shares memory with the source"));
    }
    let dims = from.shape.len();
    if !(2..=4).contains(&dims) || channels_last && dims < 3 {
        let wanted = if channels_last {
            "an H x W x C image or an N x H x W x C batch"
        } else {
            "a 2-D plane, a C x H x W stack or an N x C x H x W batch"
        };
        return Err(PyValueError::new_err(format!(
            "source: {wanted}, not shape {:?}",
            from.shape
        )));
    }
    let bytes = from.samples.bytes();
    // The axes of rows, pixels and channels, and the images before them.
    let (row_axis, pixel_axis, channel_axis) = if channels_last {
        (dims - 3, dims - 2, Some(dims - 1))
    } else {
        (dims - 2, dims - 1, (dims > 2).then_some(dims - 3))
    };
    let images = channel_axis.map_or(0, |c| c.min(row_axis));
    let (height, width) = (from.shape[row_axis], from.shape[pixel_axis]);
    let count = channel_axis.map_or(1, |c| from.shape[c]);
    if let Some(c) = channels.iter().find(|c| **c >= count) {
        return Err(PyValueError::new_err(format!(
            "channels: channel {c} is not in an array of {count} channel(s)"
        )));
    }
    let mut planes = HostPlanes {
        height,
        width,
        samples: from.samples,
        places: Vec::new(),
        source: (from.low, from.len),
    };
    if from.len == 0 || channels.is_empty() {
        return Ok(planes);
    }
    let mut selected = channels.to_vec();
    selected.sort_unstable();
    selected.dedup();
    // All of an image's interleaved channels are read and written side by side; a part of
    // them, or planes, one channel at a time.
    let together = channels_last && selected.len() == count;
    let groups: Vec<(usize, usize)> = if together {
        vec![(0, count)]
    } else {
        selected.iter().map(|c| (*c, 1)).collect()
    };
    let image_count: usize = from.shape[..images].iter().product();
    let wanted = image_count * groups.len();
    planes
        .places
        .try_reserve_exact(wanted)
        .map_err(|_| PyMemoryError::new_err(format!("{wanted} planes are more than memory holds")))?;
    let channel_stride = |array: &HostArray| channel_axis.map_or(0, |c| array.strides[c]);
    for image in 0..image_count {
        // The image's offset in each array: its index along each leading axis.
        let (mut from_offset, mut to_offset, mut rest) = (0isize, 0isize, image);
        for axis in (0..images).rev() {
            let index = (rest % from.shape[axis]) as isize;
            rest /= from.shape[axis];
            from_offset += index * from.strides[axis];
            to_offset += index * to.strides[axis];
        }
        for &(first, channels) in &groups {
            let c = first as isize;
            let source = SourceAt {
                address: from
                    .address
                    .wrapping_add_signed(from_offset + c * channel_stride(&from)),
                row: from.strides[row_axis],
                pixel: from.strides[pixel_axis],
                channel: channel_stride(&from),
                channels,
            };
            let target = TargetAt {
                address: to.address.wrapping_add_signed(to_offset + c * channel_stride(&to)),
                row: to.strides[row_axis] as usize,
                pixel: if channels_last { count * bytes } else { bytes },
            };
            planes.places.push((source, target));
        }
    }
    Ok(planes)
}

/// `len` values of `T::default()`, or `MemoryError` naming `what` where the memory cannot be
/// had: an allocation that fails the ordinary way ends the process.
pub fn try_zeroed<T: Clone + Default>(len: usize, what: impl FnOnce() -> String) -> PyResult<Vec<T>> {
    let mut values = Vec::new();
    if values.try_reserve_exact(len).is_err() {
        return Err(PyMemoryError::new_err(format!(
            "{}: {len} values of {} bytes are more than can be had",
            what(),
            std::mem::size_of::<T>()
        )));
    }
    values.resize(len, T::default());
    Ok(values)
}
