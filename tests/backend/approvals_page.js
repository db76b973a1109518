#!/usr/bin/env node
// Drives the approvals page (issue 40) in Debian's headless Chromium through playwright-core (the copy
// extension/e2e/setup.sh installs; no browser download), like a user on a phone-sized screen.
//
//   node approvals_page.js --url http://127.0.0.1:PORT/ --pw DIR [--chromium PATH] [--width 390]
//
// Reads one JSON command per line on stdin and answers each with one JSON line on stdout:
//   {"op":"pair","code":"ABCDE12345"}           -> types the code into the page's pairing form
//   {"op":"cards","n":3}                        -> waits for >= n question cards: {"count","texts"}
//   {"op":"keyApprove","match":"text"}          -> focuses that card with the keyboard (j/k) and presses a
//   {"op":"reject","match":"text","reason":"r"} -> types the reason, presses Enter
//   {"op":"always","match":"text"}              -> Always…, reads the rule shown, confirms: {"rule"}
//   {"op":"gone","match":"text"}                -> waits until no card has that text
//   {"op":"inspect","match":"text"}             -> {"text" (the command as shown), "imgs" (img elements on the page)}
//   {"op":"screenshot","path":"/x.png"}         -> a full-page screenshot; {"scrollWidth"}
'use strict';
const path = require('path');
const readline = require('readline');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const url = arg('url');
const pwDir = arg('pw');
const width = Number(arg('width', '390'));
const { chromium } = require(require.resolve('playwright-core', { paths: [pwDir, path.join(pwDir, 'node_modules')] }));

const card = (page, match) => page.locator('section.card', { hasText: match }).first();

async function run(page, cmd) {
  const T = { timeout: 20000 };
  switch (cmd.op) {
    case 'pair': {
      await page.locator('#code').fill(cmd.code, T);
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.getElementById('status').textContent === 'connected', null, T);
      return {};
    }
    case 'cards': {
      await page.waitForFunction((n) => document.querySelectorAll('section.card').length >= n, cmd.n, T);
      const texts = await page.locator('section.card pre.cmd').allTextContents();
      return { count: texts.length, texts: texts.slice(0, 5) };
    }
    case 'keyApprove': {
      const target = card(page, cmd.match);
      await target.waitFor(T);
      const id = await target.getAttribute('id');
      await page.locator('body').click({ position: { x: 1, y: 1 } });
      for (let i = 0; i < 200; i++) {  // j moves down card by card, as a keyboard user would
        const at = await page.evaluate(() => (document.activeElement.closest('section.card') || {}).id || '');
        if (at === id) break;
        await page.keyboard.press('j');
      }
      await page.keyboard.press('a');
      return { id };
    }
    case 'reject': {
      const target = card(page, cmd.match);
      await target.locator('input.reason').fill(cmd.reason, T);
      await target.locator('input.reason').press('Enter');
      return {};
    }
    case 'always': {
      const target = card(page, cmd.match);
      await target.locator('button.always').click(T);
      const rule = await target.locator('span.rule').textContent(T);
      await target.locator('button.confirm').click(T);
      return { rule };
    }
    case 'gone': {
      await page.waitForFunction((m) => ![...document.querySelectorAll('section.card')].some((c) => c.textContent.includes(m)), cmd.match, T);
      return {};
    }
    case 'inspect': {
      const target = card(page, cmd.match);
      await target.waitFor(T);
      const text = await target.locator('pre.cmd').textContent();
      const imgs = await page.evaluate(() => document.querySelectorAll('img').length);
      return { text, imgs };
    }
    case 'screenshot': {
      await page.screenshot({ path: cmd.path, fullPage: true });
      const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
      return { scrollWidth };
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

async function main() {
  const browser = await chromium.launch({
    executablePath: arg('chromium', process.env.CHROMIUM || '/usr/bin/chromium'),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width, height: 844 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30000 });
  console.log(JSON.stringify({ ok: true, ready: true }));
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    let out;
    try {
      out = { ok: true, ...(await run(page, JSON.parse(line))), errors: errors.splice(0) };
    } catch (e) {
      out = { ok: false, error: String(e).slice(0, 2000), errors: errors.splice(0) };
    }
    console.log(JSON.stringify(out));
  }
  await browser.close();
}

main().catch((e) => { console.log(JSON.stringify({ ok: false, error: String(e) })); process.exit(1); });
