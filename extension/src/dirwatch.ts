/**
 * Watches the session directory and calls back (debounced) whenever something in it may have changed.
 *
 * No `vscode` (VS Code's FileSystemWatcher only covers the workspace, and the session directory lives
 * outside it). `fs.watch` gives a fast reaction; it is watched on the directory itself, or on its
 * nearest existing ancestor until it is created (a first `oh start` creates it). A slow poll backs
 * it up, because `fs.watch` misses events on some file systems (network mounts, WSL, containers)
 * and a backend that dies without removing its file produces no event at all. Nothing here opens
 * a network connection.
 */
import * as fs from 'fs';
import * as path from 'path';

export class DirectoryWatcher {
  private watcher: fs.FSWatcher | null = null;
  private watchedPath: string | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private debounceTimer: NodeJS.Timeout | null = null;
  private disposed = false;

  constructor(
    readonly dir: string,
    private readonly onChange: () => void,
    private readonly pollMs = 2000,
    private readonly debounceMs = 30,
  ) {}

  start(): void {
    this.rewatch();
    this.pollTimer = setInterval(() => {
      this.rewatch(); // the directory may have appeared (or been removed) since
      this.fire();
    }, this.pollMs);
    this.pollTimer.unref?.();
  }

  /** Watch the directory if it exists, else its nearest existing ancestor (to learn when it appears). */
  private rewatch(): void {
    if (this.disposed) return;
    let target = this.dir;
    while (!isDir(target)) {
      const parent = path.dirname(target);
      if (parent === target) return;
      target = parent;
    }
    if (target === this.watchedPath && this.watcher) return;
    this.closeWatcher();
    try {
      const w = fs.watch(target, { persistent: false }, () => {
        if (target !== this.dir) this.rewatch();
        this.fire();
      });
      w.on('error', () => {
        // e.g. the directory was deleted: fall back to the poll, which re-establishes the watch
        this.closeWatcher();
      });
      this.watcher = w;
      this.watchedPath = target;
    } catch {
      this.watchedPath = null; // the poll keeps trying
    }
  }

  private closeWatcher(): void {
    try {
      this.watcher?.close();
    } catch {
      /* already closed */
    }
    this.watcher = null;
    this.watchedPath = null;
  }

  /** Coalesces the burst of events a single atomic rename produces. */
  fire(): void {
    if (this.disposed || this.debounceTimer) return;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = null;
      if (!this.disposed) this.onChange();
    }, this.debounceMs);
  }

  dispose(): void {
    this.disposed = true;
    this.closeWatcher();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
  }
}

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
