//! The one value of a rank-0 numeric tensor, as TensorBoard's scalars plugin reads it:
//! from `tensor_content` (little-endian bytes) or else from the typed field of its dtype,
//! half and bfloat16 bits included. Any other shape, dtype or count of values is said, and
//! the event's decoder keeps such a value as a tensor, never a scalar.

use super::proto::{DataType, TensorProto};

/// One element of `tensor_content` (little-endian) as a number.
type FromContent = fn(&[u8]) -> f64;

/// The value of a rank-0 numeric tensor, or why it is not one.
pub(super) fn tensor_scalar(tensor: &TensorProto) -> Result<f64, String> {
    if tensor
        .tensor_shape
        .as_ref()
        .is_some_and(|s| !s.dim.is_empty() || s.unknown_rank)
    {
        return Err("tensor is not rank 0".to_owned());
    }
    let dtype = DataType::try_from(tensor.dtype).unwrap_or(DataType::DtInvalid);
    let (field, size, from_content): (&str, usize, FromContent) = match dtype {
        DataType::DtFloat => ("float_val", 4, |b| f64::from(f32::from_le_bytes(le(b)))),
        DataType::DtDouble => ("double_val", 8, |b| f64::from_le_bytes(le(b))),
        DataType::DtInt32 => ("int_val", 4, |b| f64::from(i32::from_le_bytes(le(b)))),
        DataType::DtInt16 => ("int_val", 2, |b| f64::from(i16::from_le_bytes(le(b)))),
        DataType::DtInt8 => ("int_val", 1, |b| f64::from(i8::from_le_bytes(le(b)))),
        DataType::DtUint8 => ("int_val", 1, |b| f64::from(u8::from_le_bytes(le(b)))),
        DataType::DtUint16 => ("int_val", 2, |b| f64::from(u16::from_le_bytes(le(b)))),
        DataType::DtInt64 => ("int64_val", 8, |b| i64::from_le_bytes(le(b)) as f64),
        DataType::DtUint32 => ("uint32_val", 4, |b| f64::from(u32::from_le_bytes(le(b)))),
        DataType::DtUint64 => ("uint64_val", 8, |b| u64::from_le_bytes(le(b)) as f64),
        DataType::DtBool => ("bool_val", 1, |b| {
            f64::from(u8::from(b.first() != Some(&0)))
        }),
        DataType::DtHalf => ("half_val", 2, |b| half(u16::from_le_bytes(le(b)))),
        DataType::DtBfloat16 => ("half_val", 2, |b| bfloat16(u16::from_le_bytes(le(b)))),
        other => return Err(format!("dtype {} is not numeric", other.as_str_name())),
    };
    if !tensor.tensor_content.is_empty() {
        if tensor.tensor_content.len() != size {
            return Err("tensor_content is not one element".to_owned());
        }
        return Ok(from_content(&tensor.tensor_content));
    }
    let values: Vec<f64> = match field {
        "float_val" => tensor.float_val.iter().map(|v| f64::from(*v)).collect(),
        "double_val" => tensor.double_val.clone(),
        "int64_val" => tensor.int64_val.iter().map(|v| *v as f64).collect(),
        "uint32_val" => tensor.uint32_val.iter().map(|v| f64::from(*v)).collect(),
        "uint64_val" => tensor.uint64_val.iter().map(|v| *v as f64).collect(),
        "bool_val" => tensor
            .bool_val
            .iter()
            .map(|v| f64::from(u8::from(*v)))
            .collect(),
        "half_val" if dtype == DataType::DtHalf => {
            tensor.half_val.iter().map(|v| half(*v as u16)).collect()
        }
        "half_val" => tensor
            .half_val
            .iter()
            .map(|v| bfloat16(*v as u16))
            .collect(),
        _ => tensor.int_val.iter().map(|v| f64::from(*v)).collect(),
    };
    match values.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!("{field} holds {} values", values.len())),
    }
}

fn le<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().unwrap_or([0; N])
}

/// IEEE half precision bits as a number.
fn half(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

fn bfloat16(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_and_bfloat16_bits_read_as_numbers() {
        assert_eq!(half(0x3c00), 1.0);
        assert_eq!(half(0xc000), -2.0);
        assert_eq!(bfloat16(0x3f80), 1.0);
        assert!(half(0x7e00).is_nan());
    }
}
