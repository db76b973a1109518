/**
 * The URI the extension answers: vscode://oh-dev.oh-vscode/connect?session=<instance_id>
 * (`code --open-url`, or a link the CLI prints). Pure, so the parsing is unit-tested.
 */

export interface ConnectRequest {
  /** Only this backend; undefined = every backend targeting this window. */
  session?: string;
}

/** The request a URI's path and query ask for, or null when it is not one this extension handles. */
export function parseConnectUri(path: string, query: string): ConnectRequest | null {
  if (path.replace(/\/+$/, '') !== '/connect') return null;
  const session = new URLSearchParams(query).get('session') ?? '';
  // Instance ids are short tokens; anything else is not an id we could match (and is not logged raw).
  if (session && !/^[A-Za-z0-9_.-]{1,64}$/.test(session)) return null;
  return session ? { session } : {};
}
