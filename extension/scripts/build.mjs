// Builds the unpacked extension into dist/: one self-contained IIFE bundle per execution context
// (MV3 content scripts cannot be ES modules), the pages, _locales, the manifest and the icons.
// Downloads nothing.
import { build } from "esbuild";
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deflateSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const dist = join(root, "dist");

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const entries = {
  background: "background/index.ts",
  content: "content/index.ts",
  "main-world": "main-world/index.ts",
  webmcp: "content/webmcp.ts",
  "panel/panel": "panel/index.ts",
  "popup/popup": "popup/index.ts",
  "options/options": "options/index.ts",
};

await build({
  entryPoints: Object.fromEntries(Object.entries(entries).map(([out, file]) => [out, join(src, file)])),
  outdir: dist,
  bundle: true,
  format: "iife",
  target: "chrome120",
  platform: "browser",
  sourcemap: "linked",
  minify: false,
  legalComments: "none",
  logLevel: "warning",
});

// The page-tools polyfill runs at document_start on every page load of the sites where page tools
// are on: minified, so that parsing it stays well under the 1 ms install budget.
await build({
  entryPoints: { "webmcp-main": join(src, "main-world/webmcp.ts") },
  outdir: dist,
  bundle: true,
  format: "iife",
  target: "chrome120",
  platform: "browser",
  sourcemap: "linked",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});

cpSync(join(src, "popup/popup.html"), join(dist, "popup/popup.html"));
cpSync(join(src, "options/options.html"), join(dist, "options/options.html"));
cpSync(join(src, "panel/panel.html"), join(dist, "panel/panel.html"));
cpSync(join(src, "panel/panel.css"), join(dist, "panel/panel.css"));
// the example skills and the format's JSON Schema ship with the extension (the panel imports them)
cpSync(join(root, "skills"), join(dist, "skills"), { recursive: true });
mkdirSync(join(dist, "shared"), { recursive: true });
cpSync(join(src, "shared/page.css"), join(dist, "shared/page.css"));
cpSync(join(src, "_locales"), join(dist, "_locales"), { recursive: true });
cpSync(join(src, "manifest.json"), join(dist, "manifest.json"));

// Icons: a rounded square with a link mark, drawn here so no binary lives in the repository.
mkdirSync(join(dist, "icons"), { recursive: true });
for (const size of [16, 32, 48, 128]) writeFileSync(join(dist, "icons", `${size}.png`), icon(size));

const manifest = JSON.parse(readFileSync(join(dist, "manifest.json"), "utf8"));
console.log(`built ${manifest.name === "__MSG_extName__" ? "ground-link" : manifest.name} ${manifest.version} into ${dist}`);

function icon(size) {
  const px = Buffer.alloc(size * size * 4);
  const r = size * 0.22;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 4;
      const cx = Math.min(Math.max(x + 0.5, r), size - r);
      const cy = Math.min(Math.max(y + 0.5, r), size - r);
      const inside = Math.hypot(x + 0.5 - cx, y + 0.5 - cy) <= r;
      if (!inside) continue;
      // two interlocking rings
      const d1 = Math.hypot(x + 0.5 - size * 0.4, y + 0.5 - size * 0.5);
      const d2 = Math.hypot(x + 0.5 - size * 0.6, y + 0.5 - size * 0.5);
      const ring = (d) => Math.abs(d - size * 0.17) < Math.max(1, size * 0.05);
      const mark = ring(d1) || ring(d2);
      px.set(mark ? [255, 255, 255, 255] : [31, 111, 235, 255], i);
    }
  }
  return png(size, size, px);
}

function png(w, h, rgba) {
  const raw = Buffer.alloc((w * 4 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 4 + 1)] = 0;
    rgba.copy(raw, y * (w * 4 + 1) + 1, y * w * 4, (y + 1) * w * 4);
  }
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

function crc32(buf) {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c;
}
