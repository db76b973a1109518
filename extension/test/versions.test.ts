// versions.ts: what the user sees when oh and this extension are different releases (table).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INSTALL_FIX, problemFromRefusal, problemFromRegistered } from '../src/versions';
import { PROTOCOL_RANGE, registerFrame } from '../src/protocol';

test('registered answers: the backend verdict wins, else a version difference, else nothing', () => {
  const rows: [Record<string, unknown>, string, string | undefined][] = [
    [{ oh_version: '0.1.0', protocol_range: [1, 1] }, '0.1.0', undefined],
    [{}, '0.1.0', undefined], // a backend from before versions: nothing to compare
    [
      {
        oh_version: '0.2.0',
        version_check: {
          status: 'warn',
          message: 'oh 0.2.0 and the oh extension 0.1.0 are from different releases.',
          fix: 'Run `oh vscode install`.',
        },
      },
      '0.1.0',
      'oh: oh 0.2.0 and the oh extension 0.1.0 are from different releases. Fix: Run `oh vscode install`.',
    ],
    [
      { oh_version: '0.2.0' },
      '0.1.0',
      `oh: oh 0.2.0 and this extension 0.1.0 are from different releases. Fix: ${INSTALL_FIX}, or upgrade oh.`,
    ],
    [{ oh_version: '0.2.0', version_check: { status: 'ok' } }, '0.1.0', undefined],
  ];
  for (const [answer, own, expected] of rows) {
    const p = problemFromRegistered(answer, own);
    assert.equal(p?.text, expected, JSON.stringify(answer));
    if (p) assert.equal(p.level, 'warn');
  }
});

test('refusals keep the backend message and add the fix only when it names none', () => {
  const named = problemFromRefusal(
    'oh 0.1.0 is too old for the oh extension 9.0.0: ... Fix: Upgrade oh (from a clone: `git pull`).',
  );
  assert.equal(named.level, 'error');
  assert.ok(named.text.startsWith('oh: oh 0.1.0 is too old') && !named.text.includes(INSTALL_FIX));
  const old = problemFromRefusal('This backend speaks protocol 1, the editor speaks 2: update the older side.');
  assert.ok(old.text.includes('oh vscode install') && old.text.includes('upgrade oh'));
});

test('register carries the protocol range', () => {
  const f = registerFrame({
    session: null,
    workspaceFolders: ['/w'],
    editorName: 'x',
    editorVersion: '1',
    editorPid: 1,
    extensionVersion: '0.1.0',
  });
  assert.deepEqual(f.protocol_range, PROTOCOL_RANGE);
  assert.equal(f.extension_version, '0.1.0');
});
