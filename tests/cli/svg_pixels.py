#!/usr/bin/env python3
"""Renders an SVG with Debian's rsvg-convert and counts the pixels of one colour.

  svg_pixels.py RSVG_CONVERT FILE.svg [#rrggbb]   (default: #dd0000, mlactl's alarm red)

Prints "<pixels> <width> <height>". The PNG is decoded here with the standard library
(zlib, the five PNG filters), so the count is of what the renderer drew, not of the SVG
text. A pixel counts when each channel is within 24 of the colour.
"""
import struct
import subprocess
import sys
import zlib


def decode_png(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG (depth {depth}, colour {colour})"
            bpp = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    rsvg, svg = sys.argv[1], sys.argv[2]
    colour = sys.argv[3] if len(sys.argv) > 3 else "#dd0000"
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    png = subprocess.run([rsvg, svg], capture_output=True, check=True).stdout
    width, height, bpp, rows = decode_png(png)
    count = 0
    for line in rows:
        for x in range(0, width * bpp, bpp):
            if all(abs(line[x + k] - want[k]) <= 24 for k in range(3)) and (bpp == 3 or line[x + 3] > 200):
                count += 1
    print(count, width, height)


main()
