/**
 * oh and this extension as a pair (docs/protocol.md §4 "Versions"; the backend's rules are
 * src/oh/protocol/versions.py). The backend decides and sends its verdict in `registered`
 * (`version_check`) or refuses with PROTOCOL_MISMATCH; this turns either into what the user sees
 * (status bar + one notification). A backend from before versions were exchanged sends neither
 * `oh_version` nor a verdict: then nothing is said (there is nothing to compare). No `vscode` import.
 */

export const INSTALL_FIX =
  'run `oh vscode install` in a terminal (it installs the extension that ships with your oh), then reload this window';

export interface VersionProblem {
  /** 'warn': works, different releases; 'error': refused, nothing will run until fixed. */
  level: 'warn' | 'error';
  /** One sentence with the fix, for the notification and the status bar tooltip. */
  text: string;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v.slice(0, 500) : '';
}

/** From the backend's `registered` answer. */
export function problemFromRegistered(
  registered: Record<string, unknown>,
  ownVersion: string,
): VersionProblem | undefined {
  const vc = registered.version_check as Record<string, unknown> | undefined;
  if (vc && typeof vc === 'object' && vc.status !== 'ok' && str(vc.message)) {
    return { level: 'warn', text: `oh: ${str(vc.message)} Fix: ${str(vc.fix) || INSTALL_FIX + '.'}` };
  }
  const oh = str(registered.oh_version);
  if (oh && ownVersion && oh !== ownVersion && !vc) {
    // A backend that sends its version but no verdict: say the fact, name both fixes.
    return {
      level: 'warn',
      text: `oh: oh ${oh} and this extension ${ownVersion} are from different releases. Fix: ${INSTALL_FIX}, or upgrade oh.`,
    };
  }
  return undefined;
}

/** From a refused registration (`{"type":"error","error_id":"PROTOCOL_MISMATCH"}`): the backend's message names the fix. */
export function problemFromRefusal(message: string): VersionProblem {
  const text = message.trim() || 'this extension and your oh speak different protocol versions';
  // An older backend's message ("update the older side") names no command: add the two that fix it.
  const fix = /oh vscode install|upgrade oh/i.test(text)
    ? ''
    : ` Fix: ${INSTALL_FIX}, or upgrade oh (from a clone: git pull; from a wheel: install the new one, README "Install").`;
  return { level: 'error', text: `oh: ${text}${fix}` };
}
