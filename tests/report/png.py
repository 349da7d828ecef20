"""A small PNG reader (8-bit RGB or RGBA, not interlaced): enough to inspect a screenshot.

The report tests look at pixels of a Chromium screenshot; this keeps them free of an
imaging library. Rows are unfiltered as the PNG specification says (section 9).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth_row(row: bytearray, prior: bytes, bpp: int) -> None:
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        if pa <= pb and pa <= pc:
            predictor = a
        elif pb <= pc:
            predictor = b
        else:
            predictor = c
        row[i] = (row[i] + predictor) & 0xFF


def read_png(path: Path) -> npt.NDArray[np.uint8]:
    """The image as an array of shape (height, width, 3), alpha dropped."""
    data = path.read_bytes()
    if not data.startswith(_SIGNATURE):
        raise ValueError(f"{path} is not a PNG file")
    pos, idat = len(_SIGNATURE), bytearray()
    width = height = colour = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    raw = zlib.decompress(bytes(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        filter_type = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1)
        up = np.frombuffer(prior, dtype=np.uint8)
        if filter_type == 0:
            row = line.copy()
        elif filter_type == 1:  # Sub: a running sum per channel, modulo 256
            row = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(stride)
        elif filter_type == 2:  # Up
            row = line + up
        elif filter_type == 3:  # Average: depends on the reconstructed left byte
            buf = bytearray(line.tobytes())
            for i in range(stride):
                left = buf[i - bpp] if i >= bpp else 0
                buf[i] = (buf[i] + ((left + prior[i]) >> 1)) & 0xFF
            row = np.frombuffer(bytes(buf), dtype=np.uint8)
        elif filter_type == 4:
            buf = bytearray(line.tobytes())
            _paeth_row(buf, prior, bpp)
            row = np.frombuffer(bytes(buf), dtype=np.uint8)
        else:
            raise ValueError(f"bad PNG filter type {filter_type} in row {y}")
        out[y] = row
        prior = row.tobytes()
    return out.reshape(height, width, bpp)[:, :, :3]
