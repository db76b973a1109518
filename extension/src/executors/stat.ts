/**
 * `stat` (docs/protocol.md §3.9): what is at a path, as the local runtime answers it
 * (src/oh/runtimes/local/files.py stat_path). A missing path is an answer, not an error. Read from
 * the disk with node's fs: VS Code's FileStat has neither the mode nor the link count.
 */
import * as fs from 'fs';
import { ActionContext } from '../connection';
import { Action, JsonObject, Observation, statObservation } from '../protocol';
import { decodeBytes, knownMimeType } from '../textenc';
import { resolveTarget } from './files';

export const STAT_SAMPLE = 64 * 1024; // bytes read to judge a text file's encoding, as the local runtime

async function statOrNullFs(p: string, follow: boolean): Promise<fs.Stats | null> {
  try {
    return follow ? await fs.promises.stat(p) : await fs.promises.lstat(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null;
    throw e;
  }
}

/** The encoding of the first 64 KiB (`binary` when not text), null when unreadable. */
async function sampleEncoding(real: string): Promise<string | null> {
  let fh: fs.promises.FileHandle;
  try {
    // O_NONBLOCK: a FIFO swapped in after the stat must not hang us.
    fh = await fs.promises.open(real, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return null;
  }
  let data: Uint8Array;
  try {
    if (!(await fh.stat()).isFile()) return null;
    const buf = Buffer.alloc(STAT_SAMPLE + 1);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    data = buf.subarray(0, bytesRead);
  } catch {
    return null;
  } finally {
    await fh.close();
  }
  if (data.length === 0) return 'utf-8';
  if (data.length > STAT_SAMPLE) {
    data = data.subarray(0, STAT_SAMPLE);
    // Do not judge a UTF-8 character cut by the sample's end: drop a trailing lead byte and its tail.
    for (let back = 1; back <= 3; back++) {
      if (data.length > back && (data[data.length - back] & 0xc0) === 0xc0) {
        data = data.subarray(0, data.length - back);
        break;
      }
    }
  }
  return decodeBytes(data)?.encoding ?? 'binary';
}

export async function executeStat(action: Action, _signal?: AbortSignal, ctx?: ActionContext): Promise<Observation> {
  const path = String(action.args.path);
  const { rp } = await resolveTarget(path, action, ctx); // PATH_DENIED outside the roots
  const link = (await statOrNullFs(rp.shown, false).catch(() => null))?.isSymbolicLink() ?? false;
  const st = await statOrNullFs(rp.real, true).catch(() => null);
  if (!st) {
    const info: JsonObject = {
      exists: false,
      type: null,
      size: null,
      mtime: null,
      mode: null,
      encoding: null,
      mime_type: null,
      link,
    };
    return statObservation(action.id, path, `${rp.shown} does not exist.`, info);
  }
  const type = st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other';
  let encoding: string | null = null;
  let mime: string | null = null;
  if (type === 'file') {
    mime = knownMimeType(rp.shown);
    if (st.nlink <= 1) encoding = await sampleEncoding(rp.real); // a hard-linked file's content is not read
  }
  const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
  const info: JsonObject = {
    exists: true,
    type,
    size: st.size,
    mtime: st.mtimeMs / 1000,
    mode,
    encoding,
    mime_type: mime,
    link,
  };
  const what = `${type}, ${st.size} bytes, mode ${mode}` + (encoding ? `, ${encoding}` : '');
  return statObservation(action.id, path, `${rp.shown}: ${what}.`, info);
}
