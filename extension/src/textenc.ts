/**
 * Bytes <-> text for files that are not UTF-8 (read/write `encoding`, docs/protocol.md), without a dependency.
 *
 * The heuristic, documented in docs/protocol.md: valid UTF-8 is UTF-8; a UTF-16 byte-order mark
 * means UTF-16; a NUL (or mostly control bytes) in the first 8 KiB means binary; anything else is a
 * single-byte Western text: windows-1252 when it uses a byte in 0x80-0x9F (curly quotes, the euro
 * sign: cp1252's printable range there), else ISO-8859-1. Every byte maps to one character and back,
 * so an edit writes the file back in the same encoding, byte for byte outside the change. Other
 * legacy encodings (Shift-JIS, GBK, KOI8-R...) are read as one of these two and stay byte-exact on
 * write, but their characters show wrongly: the backend's local runtime (charset-normalizer) tells
 * them apart; the extension asks the agent to use `encoding: base64` for exact bytes.
 *
 * Pure: no `vscode`, no I/O.
 */
import { ToolError } from './protocol';

export const SNIFF_BYTES = 8192;

export type TextEncodingName = 'utf-8' | 'utf-16-le' | 'utf-16-be' | 'latin-1' | 'cp1252';

/** Canonical name for what an agent may pass as `encoding` (Python codec spellings included). */
export function canonicalEncoding(name: string): TextEncodingName | null {
  const n = name.toLowerCase().replace(/[\s_]/g, '-');
  if (['utf-8', 'utf8', 'u8'].includes(n)) return 'utf-8';
  if (['latin-1', 'latin1', 'iso-8859-1', 'iso8859-1', 'l1', '8859', 'cp819'].includes(n)) return 'latin-1';
  if (['cp1252', 'windows-1252', 'windows1252'].includes(n)) return 'cp1252';
  if (['utf-16', 'utf16', 'utf-16-le', 'utf-16le'].includes(n)) return 'utf-16-le';
  if (['utf-16-be', 'utf-16be'].includes(n)) return 'utf-16-be';
  return null;
}

export function looksBinaryBytes(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, SNIFF_BYTES);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const b = bytes[i];
    if (b === 0) return true;
    // C0 controls other than \t \n \v \f \r and ESC are rare in text.
    if (b < 0x20 && !(b >= 0x09 && b <= 0x0d) && b !== 0x1b) control++;
  }
  return n > 0 && control / n > 0.1;
}

export interface Decoded {
  text: string;
  encoding: TextEncodingName;
  bom: boolean;
}

/** Text and its encoding, or null when the bytes are binary. */
export function decodeBytes(bytes: Uint8Array): Decoded | null {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    return { text: new TextDecoder('utf-16le').decode(bytes.subarray(2)), encoding: 'utf-16-le', bom: true };
  }
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
    return { text: new TextDecoder('utf-16be').decode(bytes.subarray(2)), encoding: 'utf-16-be', bom: true };
  }
  if (looksBinaryBytes(bytes)) return null;
  try {
    return {
      text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes),
      encoding: 'utf-8',
      bom: false,
    };
  } catch {
    /* not UTF-8 */
  }
  const c1 = bytes.some((b) => b >= 0x80 && b <= 0x9f);
  return c1
    ? { text: decodeCp1252(bytes), encoding: 'cp1252', bom: false }
    : { text: Buffer.from(bytes).toString('latin1'), encoding: 'latin-1', bom: false };
}

/**
 * windows-1252's characters for bytes 0x80-0x9F (the rest is ISO-8859-1). The five bytes cp1252
 * leaves undefined map to the C1 control of the same number, as WHATWG does, so every byte
 * round-trips. Spelled out because Node's TextDecoder('windows-1252') decodes as ISO-8859-1.
 */
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8d, 0x017d,
  0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x9d,
  0x017e, 0x0178,
];
const CP1252_REVERSE = new Map(CP1252_HIGH.map((c, i) => [c, 0x80 + i]));

function decodeCp1252(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += String.fromCharCode(b >= 0x80 && b <= 0x9f ? CP1252_HIGH[b - 0x80] : b);
  return out;
}

/** `text` in `encoding`; a character the encoding cannot hold is a TOOL_ERROR naming it (nothing is written). */
export function encodeText(text: string, encoding: TextEncodingName, bom = false, shown = 'the file'): Uint8Array {
  switch (encoding) {
    case 'utf-8':
      return new TextEncoder().encode(text);
    case 'utf-16-le':
    case 'utf-16-be': {
      const le = encoding === 'utf-16-le';
      const out = Buffer.alloc((bom ? 2 : 0) + text.length * 2);
      let o = 0;
      if (bom) {
        out[0] = le ? 0xff : 0xfe;
        out[1] = le ? 0xfe : 0xff;
        o = 2;
      }
      for (let i = 0; i < text.length; i++, o += 2) {
        const c = text.charCodeAt(i);
        if (le) out.writeUInt16LE(c, o);
        else out.writeUInt16BE(c, o);
      }
      return out;
    }
    case 'latin-1':
    case 'cp1252': {
      const table = encoding === 'cp1252' ? CP1252_REVERSE : null;
      const out = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        let b: number | undefined;
        if (c < 0x80 || (c >= 0xa0 && c <= 0xff)) b = c;
        else if (table) b = table.get(c);
        else if (c <= 0xff) b = c;
        if (b === undefined) {
          throw new ToolError(
            `Cannot write ${shown} in its encoding ${encoding}: the character ${JSON.stringify(text[i])} (U+${c.toString(16).toUpperCase().padStart(4, '0')}) ` +
              'does not exist there. Write it with `encoding: "utf-8"` (converts the file) or leave that character out.',
          );
        }
        out[i] = b;
      }
      return out;
    }
  }
}

/** Python's mimetypes for the usual suspects; application/octet-stream otherwise. */
export function guessMimeType(path: string): string {
  return knownMimeType(path) ?? 'application/octet-stream';
}

/** The MIME type for a known file name extension, else null (Python's mimetypes.guess_type None). */
export function knownMimeType(path: string): string | null {
  const ext = (/\.([A-Za-z0-9]+)$/.exec(path)?.[1] ?? '').toLowerCase();
  const types: Record<string, string> = {
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
    gif: 'image/gif',
    webp: 'image/webp',
    bmp: 'image/bmp',
    svg: 'image/svg+xml',
    ico: 'image/vnd.microsoft.icon',
    tif: 'image/tiff',
    tiff: 'image/tiff',
    pdf: 'application/pdf',
    zip: 'application/zip',
    gz: 'application/gzip',
    tar: 'application/x-tar',
    json: 'application/json',
    txt: 'text/plain',
    html: 'text/html',
    htm: 'text/html',
    css: 'text/css',
    js: 'text/javascript',
    csv: 'text/csv',
    xml: 'application/xml',
    md: 'text/markdown',
    py: 'text/x-python',
    wasm: 'application/wasm',
    mp3: 'audio/mpeg',
    wav: 'audio/x-wav',
    mp4: 'video/mp4',
  };
  return types[ext] ?? null;
}
