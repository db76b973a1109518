/**
 * What JSON.parse forgets but the backend's decoder (Python, orjson) keeps: whether a number was written
 * as an integer. Python reads `2.0`, `2e0` and integers beyond 64 bits as floats, so the backend refuses
 * them where the protocol wants an integer (an action `id`, `args.start`...); JavaScript reads all of
 * them as the integer 2 (or a huge integral double). To give the same verdict on the same text, the
 * extension scans a frame once more after JSON.parse succeeded and remembers where such numbers stand.
 *
 * The scan also refuses what orjson refuses but JSON.parse accepts, so a frame is "valid JSON" on both
 * sides or on neither: a number that overflows to Infinity, an escaped lone surrogate (`"\ud800"`), and
 * nesting deeper than 1024 levels.
 *
 * Pure, and O(length) with native string searches for string bodies (frames carry file contents).
 */

/** Refused by the backend's decoder although JSON.parse accepts it; the message says why. */
export class JsonScanError extends Error {}

/** orjson's nesting limit: 1024 nested arrays/objects parse, 1025 do not. */
export const MAX_DEPTH = 1024;
const I64_MIN = -(2n ** 63n);
const U64_MAX = 2n ** 64n - 1n;
const NUMBER = /-?\d+(\.\d+)?([eE][+-]?\d+)?/y;
/** A `\\u` escape of a UTF-16 surrogate (outside strings JSON has no backslashes). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g;

/** A path inside a frame as a Set key, e.g. pathKey(['args', 'view_range', 1]). */
export function pathKey(path: ReadonlyArray<string | number>): string {
  return JSON.stringify(path);
}

interface Level {
  isArray: boolean;
  /** Current key (object) or index (array). */
  at: string | number;
  /** Object only: the next string is a key. */
  expectKey: boolean;
}

/**
 * Paths (see pathKey) down to `maxDepth` levels whose number the backend reads as a float although it
 * is integral for JavaScript; the last occurrence of a duplicated key wins, as in both decoders.
 * `text` must already be valid JSON (JSON.parse accepted it). Throws JsonScanError, see above.
 */
export function pythonFloatPaths(text: string, maxDepth = 3): Set<string> {
  checkSurrogateEscapes(text);
  const floats = new Set<string>();
  const stack: Level[] = [];
  const here = () => stack.map((l) => l.at);
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '{' || c === '[') {
      if (stack.length >= MAX_DEPTH) throw new JsonScanError(`nested deeper than ${MAX_DEPTH} levels`);
      stack.push({ isArray: c === '[', at: c === '[' ? 0 : '', expectKey: c === '{' });
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top.isArray) top.at = (top.at as number) + 1;
      else top.expectKey = true;
      i++;
    } else if (c === '"') {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top && !top.isArray && top.expectKey) {
        // Keys are decoded only where a path is still tracked: "\u0069d" is the key "id".
        top.at = stack.length <= maxDepth ? (JSON.parse(text.slice(i, end)) as string) : '';
        top.expectKey = false;
      }
      i = end;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const token = NUMBER.exec(text)![0];
      i += token.length;
      const value = Number(token);
      if (!Number.isFinite(value)) throw new JsonScanError(`number ${token.slice(0, 40)} is out of range`);
      if (stack.length > maxDepth || !Number.isInteger(value)) continue;
      const float = /[.eE]/.test(token) || outsideInt64(token);
      const key = pathKey(here());
      if (float) floats.add(key);
      else floats.delete(key);
    } else {
      i++; // whitespace, ':', and the letters of true/false/null
    }
  }
  return floats;
}

function outsideInt64(token: string): boolean {
  if (token.length < 19) return false;
  const v = BigInt(token);
  return v < I64_MIN || v > U64_MAX;
}

/** Index just past the string starting at `start` (a quote): the first quote not escaped by a backslash. */
function stringEnd(text: string, start: number): number {
  for (let q = text.indexOf('"', start + 1); ; q = text.indexOf('"', q + 1)) {
    if (q < 0) return text.length; // unterminated: cannot happen after JSON.parse, and never loops
    let slashes = 0;
    while (text.charCodeAt(q - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return q + 1;
  }
}

/**
 * Refuses a `\u` escape of a lone surrogate: a high one (D800-DBFF) not followed at once by an escaped
 * low one (DC00-DFFF), or a low one without a high one before it. Frames rarely hold such escapes, so
 * a cheap search decides first whether to look at all.
 */
function checkSurrogateEscapes(text: string): void {
  SURROGATE_ESCAPE.lastIndex = 0;
  for (let m = SURROGATE_ESCAPE.exec(text); m; m = SURROGATE_ESCAPE.exec(text)) {
    let slashes = 1;
    while (text.charCodeAt(m.index - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) continue; // `\\udXXX`: an escaped backslash, then plain text
    const unit = parseInt(text.slice(m.index + 2, m.index + 6), 16);
    if (unit >= 0xdc00) throw new JsonScanError('a \\u escape is a lone surrogate');
    const next = /^\\u[dD][c-fC-F][0-9a-fA-F]{2}/.exec(text.slice(m.index + 6, m.index + 12));
    if (!next) throw new JsonScanError('a \\u escape is a lone surrogate');
    SURROGATE_ESCAPE.lastIndex = m.index + 12;
  }
}
