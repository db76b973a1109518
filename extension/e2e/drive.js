#!/usr/bin/env node
// Keeps a real VS Code workbench (code-server) open in headless Chromium for the end-to-end test,
// and lets the test drive it like a user through a tiny HTTP control server on loopback.
//
//   node drive.js --url http://127.0.0.1:PORT/?folder=/ws --state DIR [--pw DIR] [--chromium PATH]
//
// code-server starts no extension host until a browser opens the workbench, so this page must stay
// open for as long as the test runs. Once the workbench is loaded it writes DIR/driver.json
// ({"pid", "control_port"}). Control requests: POST / with one JSON object, answered with JSON:
//   {"op":"ping"}                         -> {"ok":true}
//   {"op":"openFile","path":"a/b.txt"}    -> Quick Open the file (workspace-relative), wait for its tab
//   {"op":"focusEditor"}                  -> click into the active text editor
//   {"op":"press","keys":["Control+z"]}   -> keyboard presses, in order
//   {"op":"type","text":"abc"}            -> types text into whatever has the focus
//   {"op":"command","title":"File: Save"} -> run a command through the command palette
//   {"op":"dialog","button":"Run"}        -> waits for a modal dialog, clicks the button -> {"message"}
//   {"op":"notification","button":"X","text":"part of the message"} -> clicks a toast's button -> {"message"}
//   {"op":"toastGone","text":"part of the message"} -> waits until no toast shows that text
//   {"op":"inputBox","text":"why"}        -> waits for an input box (showInputBox), types the text, Enter -> {"prompt"}
//   {"op":"quickPick","text":"wants to run","pick":"Allow once"} -> waits for a question box (QuickPick) showing
//                                         text; clicks the row labelled pick (none: reads only) -> {"text","rows"}
//   {"op":"quickPickGone","text":"wants to run"} -> waits until no question box shows text
//   {"op":"clickStatus","text":"waits for you"} -> clicks the status bar item whose text contains text
//   {"op":"editorAction","label":"Accept proposal"} -> clicks an action in the active editor's title bar
//   {"op":"statusBar"}                    -> {"ok":true,"items":[...]} (status bar item texts)
//   {"op":"terminals"}                    -> {"ok":true,"names":[...]} (terminal tab names, best effort)
//   {"op":"terminalDecorations"}          -> {"ok":true,"classes":[...]} (command decorations in the terminal)
//   {"op":"activeTab"}                    -> {"ok":true,"title":...}
//   {"op":"editorText"}                   -> {"ok":true,"text":...} (the visible lines of the active editor)
//   {"op":"screenshot","path":"/x.png"}   -> a screenshot, for debugging failures
// Everything is bounded by timeouts; an error answers {"ok":false,"error":...} and the page stays open.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const url = arg('url');
const stateDir = arg('state');
const pwDir = arg('pw', process.env.OH_E2E_PW || path.join(__dirname, '..', '..', '.e2e', 'pw'));
const chromiumPath = arg('chromium', process.env.CHROMIUM || '/usr/bin/chromium');
if (!url || !stateDir) {
  console.error('usage: drive.js --url URL --state DIR [--pw DIR] [--chromium PATH]');
  process.exit(2);
}
const { chromium } = require(require.resolve('playwright-core', { paths: [pwDir, path.join(pwDir, 'node_modules')] }));

const t0 = Date.now();
const log = (...a) => console.log(`[drive +${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...a);

async function main() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // A user's window is in the foreground: never let Chromium throttle the workbench's timers.
      '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => log('page error:', String(e).slice(0, 300)));
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
  await page.locator('.monaco-workbench').first().waitFor({ state: 'visible', timeout: 90000 });
  log('workbench visible');

  const palette = async (prefix, text) => {
    await page.locator('.monaco-workbench .part.statusbar').first().click({ timeout: 5000 }).catch(() => {});
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget .quick-input-box input').first();
    await input.waitFor({ state: 'visible', timeout: 15000 });
    await input.fill(prefix + text); // '>' = commands, '' = files (Quick Open)
    return input;
  };

  const ops = {
    async ping() {
      return {};
    },
    async openFile({ path: rel }) {
      const base = path.basename(rel);
      // Quick Open finds a file created a moment ago only once the file watcher has reported it:
      // ask again until it shows up (bounded).
      const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: base }).first();
      for (let attempt = 1; ; attempt++) {
        await palette('', rel);
        try {
          await row.waitFor({ state: 'visible', timeout: 4000 });
          break;
        } catch (e) {
          await page.keyboard.press('Escape');
          if (attempt >= 6) throw e;
          await page.waitForTimeout(500);
        }
      }
      await page.keyboard.press('Enter');
      await page
        .locator('.tabs-container .tab.active')
        .filter({ hasText: base })
        .first()
        .waitFor({ state: 'visible', timeout: 15000 });
      return {};
    },
    async focusEditor() {
      const lines = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
      await lines.waitFor({ state: 'visible', timeout: 10000 });
      await lines.click({ timeout: 5000 });
      return {};
    },
    async press({ keys }) {
      for (const k of keys) {
        await page.keyboard.press(k);
        await page.waitForTimeout(100);
      }
      return {};
    },
    async type({ text }) {
      await page.keyboard.type(text, { delay: 10 });
      return {};
    },
    async command({ title }) {
      await palette('>', title);
      const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first();
      await row.waitFor({ state: 'visible', timeout: 15000 });
      await page.keyboard.press('Enter');
      return {};
    },
    async dialog({ button, timeout }) {
      // A modal message (showWarningMessage with modal: true) renders as a dialog in the workbench.
      const box = page.locator('.monaco-dialog-box').first();
      await box.waitFor({ state: 'visible', timeout: timeout || 10000 });
      const message = (await box.innerText().catch(() => '')) || '';
      await box.locator('.monaco-button').filter({ hasText: button }).first().click({ timeout: 5000 });
      await box.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
      return { message };
    },
    async notification({ button, text, timeout }) {
      // A non-modal message (showWarningMessage without modal) is a toast; click one of its buttons.
      let toast = page.locator('.notification-toast');
      if (text) toast = toast.filter({ hasText: text });
      toast = toast.first();
      await toast.waitFor({ state: 'visible', timeout: timeout || 15000 });
      const message = (await toast.innerText().catch(() => '')) || '';
      await toast.locator('.monaco-button').filter({ hasText: button }).first().click({ timeout: 5000 });
      return { message };
    },
    async toastText({ text, timeout }) {
      // The text of a notification toast containing `text` (waits for it; clicks nothing).
      const toast = page.locator('.notification-toast').filter({ hasText: text }).first();
      await toast.waitFor({ state: 'visible', timeout: timeout || 15000 });
      return { message: (await toast.innerText().catch(() => '')) || '' };
    },
    async toastGone({ text, timeout }) {
      // Waits until no notification toast contains `text` (e.g. one taken away when decided elsewhere).
      const toast = page.locator('.notification-toast').filter({ hasText: text }).first();
      await toast.waitFor({ state: 'hidden', timeout: timeout || 15000 });
      return {};
    },
    async inputBox({ text, timeout }) {
      // showInputBox renders in the quick input widget (no list rows): fill it and press Enter.
      const widget = page.locator('.quick-input-widget').first();
      await widget.waitFor({ state: 'visible', timeout: timeout || 15000 });
      const input = widget.locator('.quick-input-box input').first();
      await input.waitFor({ state: 'visible', timeout: 5000 });
      const prompt = (await widget.innerText().catch(() => '')) || '';
      await input.fill(text || '');
      await page.keyboard.press('Enter');
      await widget.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => {});
      return { prompt };
    },
    async quickPick({ text, pick, timeout }) {
      // The question box's title, rows and placeholder (the command asked about) are all matched against `text`.
      const widget = page.locator('.quick-input-widget').first();
      const read = async () => {
        if (!(await widget.isVisible().catch(() => false))) return undefined;
        const shown = (await widget.innerText().catch(() => '')) || '';
        const placeholder = (await widget.locator('.quick-input-box input').first().getAttribute('placeholder').catch(() => '')) || '';
        return (shown + '\n' + placeholder).includes(text) ? { shown, placeholder } : undefined;
      };
      const end = Date.now() + (timeout || 15000);
      let seen = await read();
      while (!seen) {
        if (Date.now() > end) throw new Error(`no question box showing ${JSON.stringify(text)}`);
        await page.waitForTimeout(200);
        seen = await read();
      }
      const rows = (await widget.locator('.quick-input-list .monaco-list-row').allInnerTexts().catch(() => [])).map((t) => t.replace(/\s+/g, ' ').trim());
      if (pick) {
        // Rows read "label description": the row whose label is `pick`.
        const row = widget.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: pick }) }).first();
        await row.click({ timeout: 5000 });
      }
      return { text: seen.shown, placeholder: seen.placeholder, rows };
    },
    async quickPickGone({ text, timeout }) {
      const widget = page.locator('.quick-input-widget').first();
      const end = Date.now() + (timeout || 15000);
      for (;;) {
        const visible = await widget.isVisible().catch(() => false);
        const shown = visible ? ((await widget.innerText().catch(() => '')) || '') + ((await widget.locator('input').first().getAttribute('placeholder').catch(() => '')) || '') : '';
        if (!shown.includes(text)) return {};
        if (Date.now() > end) throw new Error(`a question box still shows ${JSON.stringify(text)}`);
        await page.waitForTimeout(200);
      }
    },
    async clickStatus({ text, timeout }) {
      const item = page.locator('.part.statusbar .statusbar-item').filter({ hasText: text }).first();
      await item.waitFor({ state: 'visible', timeout: timeout || 15000 });
      await item.locator('a, .statusbar-item-label').first().click({ timeout: 5000 });
      return {};
    },
    async editorAction({ label, timeout }) {
      // Editor title actions (menus "editor/title", group navigation) render as icons labelled by their title.
      const action = page.locator(`.editor-group-container.active .editor-actions .action-label[aria-label^="${label}"]`).first();
      await action.waitFor({ state: 'visible', timeout: timeout || 15000 });
      await action.click({ timeout: 5000 });
      return {};
    },
    async editorActions() {
      // The labels of the active editor's title-bar actions (what the user can click there).
      const labels = await page.locator('.editor-group-container.active .editor-actions .action-label').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') || '')).catch(() => []);
      return { labels: labels.filter(Boolean) };
    },
    async statusBar() {
      // Every status bar item's text (codicons render as empty spans): what the user reads there.
      const items = await page.locator('.part.statusbar .statusbar-item').allInnerTexts().catch(() => []);
      return { items: items.map((t) => t.trim()).filter(Boolean) };
    },
    async terminals() {
      // The terminal tabs' names (the panel lists them when there are two or more).
      const names = await page.locator('.terminal-tabs-entry, .single-terminal-tab, .tabs-list .monaco-list-row').allInnerTexts().catch(() => []);
      return { names: names.map((t) => t.trim()).filter(Boolean) };
    },
    async terminalDecorations() {
      // The class lists of the terminal's command decorations (shell integration's success / error marks).
      const classes = await page.locator('.part.panel [class*="terminal-command-decoration"]').evaluateAll((els) => els.map((e) => e.className)).catch(() => []);
      return { classes };
    },
    async activeTab() {
      const t = page.locator('.tabs-container .tab.active').first();
      return { title: (await t.textContent({ timeout: 5000 }).catch(() => '')) || '' };
    },
    async editorText() {
      const el = page.locator('.editor-group-container.active .monaco-editor .view-lines').first();
      // Monaco renders spaces as non-breaking spaces.
      const text = (await el.innerText({ timeout: 5000 }).catch(() => '')) || '';
      return { text: text.replace(/\u00a0/g, ' ') };
    },
    async diffSides() {
      // The active diff editor's two sides as rendered, and the texts of decorations shown after lines
      // (CSS ::after content) on the modified side: what the user reads there.
      const group = page.locator('.editor-group-container.active .monaco-diff-editor').first();
      const side = async (cls) => ((await group.locator(`.editor.${cls} .view-lines`).first().innerText({ timeout: 5000 }).catch(() => '')) || '').replace(/\u00a0/g, ' ');
      const labels = await group.locator('.editor.modified .view-lines span').evaluateAll((els) =>
        els.map((e) => getComputedStyle(e, '::after').content).filter((c) => c && c !== 'none' && c !== 'normal').map((c) => c.replace(/^"|"$/g, '')),
      ).catch(() => []);
      return { original: await side('original'), modified: await side('modified'), labels };
    },
    async screenshot({ path: p }) {
      await page.screenshot({ path: p });
      return {};
    },
  };

  // One request at a time: a user has one keyboard.
  let chain = Promise.resolve();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      chain = chain.then(async () => {
        let answer;
        try {
          const msg = JSON.parse(body || '{}');
          const fn = ops[msg.op];
          if (!fn) throw new Error(`unknown op ${msg.op}`);
          log('op', msg.op, JSON.stringify(msg).slice(0, 200));
          answer = { ok: true, ...(await fn(msg)) };
        } catch (e) {
          answer = { ok: false, error: String((e && e.message) || e).slice(0, 2000) };
          log('op failed:', answer.error.split('\n')[0]);
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(answer));
      });
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const info = { pid: process.pid, control_port: server.address().port };
  fs.writeFileSync(path.join(stateDir, 'driver.json.tmp'), JSON.stringify(info));
  fs.renameSync(path.join(stateDir, 'driver.json.tmp'), path.join(stateDir, 'driver.json'));
  log('control server on port', info.control_port);

  const shutdown = async () => {
    server.close();
    await browser.close().catch(() => {});
    process.exit(0);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  browser.on('disconnected', () => {
    log('browser disconnected');
    process.exit(3);
  });
}

main().catch((e) => {
  console.error('drive.js failed:', e);
  process.exit(2);
});
