#!/usr/bin/env python3
"""Draws ground-link's icons (app icon and tray states) as PNG files with the standard library
only, so they can be rebuilt anywhere: python3 scripts/app-icons.py [out-dir]."""
import struct
import sys
import zlib
from pathlib import Path

# 3x5 digits for the "waiting for approval" count.
DIGITS = {
    "0": ["111", "101", "101", "101", "111"], "1": ["010", "110", "010", "010", "111"],
    "2": ["111", "001", "111", "100", "111"], "3": ["111", "001", "111", "001", "111"],
    "4": ["101", "101", "111", "001", "001"], "5": ["111", "100", "111", "001", "111"],
    "6": ["111", "100", "111", "101", "111"], "7": ["111", "001", "010", "010", "010"],
    "8": ["111", "101", "111", "101", "111"], "9": ["111", "101", "111", "001", "111"],
    "+": ["000", "010", "111", "010", "000"],
}

GREY = (128, 134, 140)
GREEN = (46, 160, 90)
AMBER = (226, 138, 22)
BLUE = (52, 112, 200)
WHITE = (255, 255, 255)


def png(path, size, pixel):
    """pixel(x, y) -> (r, g, b, a) in unit coordinates; 4x4 supersampling for smooth edges."""
    rows = bytearray()
    ss = 4
    for y in range(size):
        rows.append(0)
        for x in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(ss):
                for sx in range(ss):
                    u = (x + (sx + 0.5) / ss) / size
                    v = (y + (sy + 0.5) / ss) / size
                    r, g, b, a = pixel(u, v)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            n = ss * ss
            alpha = acc[3] / n
            if alpha > 0:
                rgb = [int(round(c / acc[3])) for c in acc[:3]]
            else:
                rgb = [0, 0, 0]
            rows.extend(bytes(rgb + [int(round(alpha * 255))]))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    data = b"\x89PNG\r\n\x1a\n"
    data += chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
    data += chunk(b"IDAT", zlib.compress(bytes(rows), 9))
    data += chunk(b"IEND", b"")
    Path(path).write_bytes(data)


def ring(u, v, cx, cy, r, w):
    d = ((u - cx) ** 2 + (v - cy) ** 2) ** 0.5
    return abs(d - r) <= w / 2


def link(u, v):
    """Two interlocked rings: the 'link' mark."""
    return ring(u, v, 0.40, 0.5, 0.15, 0.07) or ring(u, v, 0.60, 0.5, 0.15, 0.07)


def disk(u, v):
    return ((u - 0.5) ** 2 + (v - 0.5) ** 2) ** 0.5 <= 0.46


def icon(colour, mark, hollow=False):
    def pixel(u, v):
        if mark(u, v):
            return (*(colour if hollow else WHITE), 1.0)
        if disk(u, v):
            if hollow:
                edge = ((u - 0.5) ** 2 + (v - 0.5) ** 2) ** 0.5 >= 0.40
                return (*colour, 1.0) if edge else (0, 0, 0, 0.0)
            return (*colour, 1.0)
        return (0, 0, 0, 0.0)

    return pixel


def text_mark(text):
    cells = [DIGITS[c] for c in text]
    cols = 4 * len(cells) - 1
    scale = 0.56 / max(cols, 5)
    x0 = 0.5 - cols * scale / 2
    y0 = 0.5 - 5 * scale / 2

    def mark(u, v):
        cx = int((u - x0) // scale)
        cy = int((v - y0) // scale)
        if not (0 <= cy < 5 and 0 <= cx < cols) or u < x0 or v < y0:
            return False
        glyph, col = divmod(cx, 4)
        if col == 3:
            return False
        return cells[glyph][cy][col] == "1"

    return mark


def paused(u, v):
    return (0.36 <= u <= 0.45 or 0.55 <= u <= 0.64) and 0.30 <= v <= 0.70


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "icons")
    out.mkdir(parents=True, exist_ok=True)
    app = icon(BLUE, link)
    for name, size in [("32x32.png", 32), ("128x128.png", 128), ("128x128@2x.png", 256), ("icon.png", 512)]:
        png(out / name, size, app)
    tray = 64
    png(out / "tray-disconnected.png", tray, icon(GREY, link, hollow=True))
    png(out / "tray-connected.png", tray, icon(GREEN, link))
    png(out / "tray-paused.png", tray, icon(GREY, paused))
    for n in range(1, 10):
        png(out / f"tray-waiting-{n}.png", tray, icon(AMBER, text_mark(str(n))))
    png(out / "tray-waiting-9plus.png", tray, icon(AMBER, text_mark("9+")))


if __name__ == "__main__":
    main()
