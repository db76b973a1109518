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
const STRING_STOP = /["\\]/g;

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

/** Index just past the string starting at `start` (a quote); checks \u escapes pair up as UTF-16. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  let pendingHigh = false; // the previous escape was a high surrogate: a low one must follow at once
  for (;;) {
    STRING_STOP.lastIndex = i;
    const m = STRING_STOP.exec(text)!;
    if (pendingHigh && m.index !== i) throw new JsonScanError('a \\u escape is a lone surrogate');
    if (m[0] === '"') {
      if (pendingHigh) throw new JsonScanError('a \\u escape is a lone surrogate');
      return m.index + 1;
    }
    const esc = text[m.index + 1];
    if (esc !== 'u') {
      if (pendingHigh) throw new JsonScanError('a \\u escape is a lone surrogate');
      i = m.index + 2;
      continue;
    }
    const unit = parseInt(text.slice(m.index + 2, m.index + 6), 16);
    const high = unit >= 0xd800 && unit <= 0xdbff;
    const low = unit >= 0xdc00 && unit <= 0xdfff;
    if (low !== pendingHigh) throw new JsonScanError('a \\u escape is a lone surrogate');
    pendingHigh = high;
    i = m.index + 6;
  }
}
