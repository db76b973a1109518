/**
 * `write` modes `create` and `append` (docs/protocol.md §3.9), with the local runtime's semantics
 * (src/oh/runtimes/local/files.py write_file / append_file):
 * - create: only if the name is free. The complete file is written under a private temporary name
 *   and linked to its name with link(2), which fails if the name was taken meanwhile: nobody ever
 *   sees a half-written file, and a file created concurrently is never replaced. An existing path
 *   is left unchanged and the answer says so.
 * - append: one O_APPEND write (never losing or tearing what was there) in the file's encoding
 *   unless one is given; a missing file is created; a hard-linked file is refused (PATH_DENIED).
 *   A document open with unsaved changes gets the text appended to its buffer, not saved (the
 *   buffer is the truth a `read` returns; saving would write the user's unsaved text silently).
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { ActionContext } from '../connection';
import { Action, Observation, ToolError, writeObservation } from '../protocol';
import { canonicalEncoding, encodeText, TextEncodingName } from '../textenc';
import {
  applyAndSave,
  createParents,
  diskEncoding,
  fsError,
  openDocument,
  resolveTarget,
  Target,
  unsavedNote,
  waitForDocumentText,
} from './files';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const RELOAD_WAIT_MS = 1500;

export function base64Bytes(content: string): Uint8Array {
  const compact = content.replace(/\s+/g, '');
  if (compact.length % 4 === 1 || !BASE64.test(compact)) {
    throw new ToolError('args.content is not valid base64 (encoding "base64"); nothing was written.', 'BAD_REQUEST');
  }
  return Buffer.from(compact, 'base64');
}

function namedEncoding(encoding: string): TextEncodingName {
  const enc = canonicalEncoding(encoding);
  if (!enc) {
    throw new ToolError(
      `The encoding ${JSON.stringify(encoding)} is not supported by the VS Code extension: use utf-8, latin-1, cp1252, utf-16-le, utf-16-be or base64.`,
    );
  }
  return enc;
}

async function statFs(p: string): Promise<fs.Stats | null> {
  try {
    return await fs.promises.stat(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw e;
  }
}

/** Devices, FIFOs, sockets and directories are refused with the local runtime's words. */
function requireRegular(shown: string, st: fs.Stats): void {
  if (st.isFile()) return;
  if (st.isDirectory()) throw new ToolError(`The path ${shown} is a directory; cannot write it as a file.`);
  const kind = st.isFIFO()
    ? 'FIFO'
    : st.isSocket()
      ? 'socket'
      : st.isCharacterDevice() || st.isBlockDevice()
        ? 'device'
        : 'special file';
  throw new ToolError(`The path ${shown} is a ${kind}, not a regular file; refusing to write it.`);
}

function existsNote(shown: string): string {
  return `The file ${shown} already exists; it was not changed (mode create).`;
}

export async function writeCreate(action: Action, ctx?: ActionContext): Promise<Observation> {
  const a = action.args;
  const target = await resolveTarget(String(a.path), action, ctx);
  const { rp } = target;
  const shown = String(a.path);
  const st = await statFs(rp.real).catch((e) => {
    throw fsError(e, rp.shown, 'write');
  });
  if (st) {
    requireRegular(rp.shown, st);
    return writeObservation(action.id, shown, existsNote(rp.shown));
  }
  const content = String(a.content);
  const data =
    a.encoding === 'base64'
      ? base64Bytes(content)
      : encodeText(content, typeof a.encoding === 'string' ? namedEncoding(a.encoding) : 'utf-8', false, rp.shown);
  await createParents(target.uri, rp.shown);
  const tmp = path.join(path.dirname(rp.real), `.oh-${crypto.randomBytes(6).toString('hex')}.tmp`);
  try {
    // 'wx': O_EXCL, never through a planted symlink; mode 0666 minus the umask, like a new file of the local runtime.
    const fh = await fs.promises.open(tmp, 'wx', 0o666);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await fs.promises.link(tmp, rp.real);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST')
        return writeObservation(action.id, shown, existsNote(rp.shown));
      throw e;
    }
  } catch (e) {
    if (e instanceof ToolError) throw e;
    throw fsError(e, rp.shown, 'write');
  } finally {
    await fs.promises.unlink(tmp).catch(() => undefined);
  }
  return writeObservation(action.id, shown);
}

function hardLinked(shown: string, n: number): ToolError {
  return new ToolError(
    `The file ${shown} has ${n} hard links; oh cannot tell whether another of them is outside the ` +
      'allowed roots, so it does not append to it. If its content is yours to change, give it a name of its own ' +
      `(\`cp -p ${shown} ${shown}.tmp && mv ${shown}.tmp ${shown}\`) or append from the shell.`,
    'PATH_DENIED',
  );
}

async function appendBytes(target: Target, data: Uint8Array): Promise<void> {
  const { rp } = target;
  const c = fs.constants;
  let fh: fs.promises.FileHandle;
  try {
    // O_NONBLOCK: a FIFO swapped in after the stat must not hang us; O_NOFOLLOW: nor a symlink.
    fh = await fs.promises.open(rp.real, c.O_WRONLY | c.O_APPEND | c.O_CREAT | c.O_NONBLOCK | c.O_NOFOLLOW, 0o666);
  } catch (e) {
    throw fsError(e, rp.shown, 'write');
  }
  try {
    const st = await fh.stat();
    requireRegular(rp.shown, st);
    if (st.nlink > 1) throw hardLinked(rp.shown, st.nlink);
    await fh.write(data); // one write(2) with O_APPEND: lands after whatever is there at that moment
    await fh.sync();
  } catch (e) {
    if (e instanceof ToolError) throw e;
    throw fsError(e, rp.shown, 'write');
  } finally {
    await fh.close();
  }
}

export async function writeAppend(action: Action, ctx?: ActionContext): Promise<Observation> {
  const a = action.args;
  const target = await resolveTarget(String(a.path), action, ctx);
  const { rp, uri } = target;
  const shown = String(a.path);
  const content = String(a.content);
  const st = await statFs(rp.real).catch((e) => {
    throw fsError(e, rp.shown, 'write');
  });
  if (st) {
    requireRegular(rp.shown, st);
    if (st.nlink > 1) throw hardLinked(rp.shown, st.nlink); // appending would change the other names' file too
  }
  const doc = openDocument(uri);
  if (doc && doc.isDirty && a.encoding !== 'base64') {
    await applyAndSave(doc, doc.getText() + content, rp.shown, false);
    return writeObservation(action.id, shown, unsavedNote(rp.shown).trim());
  }
  let data: Uint8Array;
  let utf8 = false;
  if (a.encoding === 'base64') data = base64Bytes(content);
  else if (typeof a.encoding === 'string' && a.encoding !== '') {
    const enc = namedEncoding(a.encoding);
    data = encodeText(content, enc, false, rp.shown);
    utf8 = enc === 'utf-8';
  } else {
    // The file's own encoding (never a second BOM).
    const enc = (st ? (await diskEncoding(target))?.encoding : null) ?? 'utf-8';
    data = encodeText(content, enc, false, rp.shown);
    utf8 = enc === 'utf-8';
  }
  if (!st) await createParents(uri, rp.shown);
  const before = doc && !doc.isClosed ? doc.getText() : null;
  await appendBytes(target, data);
  if (doc && !doc.isClosed && before !== null && utf8) {
    // Keep the open (clean) document in step, as a whole-file write does.
    const synced = await waitForDocumentText(doc, before + content, RELOAD_WAIT_MS);
    if (!synced && !doc.isDirty) await applyAndSave(doc, before + content, rp.shown);
  }
  return writeObservation(action.id, shown);
}
