/**
 * Entry point. Activation (onStartupFinished / onUri) only creates the UI, the URI handler, the
 * commands and a watcher on oh's session directory: no network until a live session targets one of
 * this window's folders, or the user asks (command "oh: Connect to backend", or
 * vscode://oh-dev.oh-vscode/connect?session=<instance_id>).
 */
import { revertAgentAction } from './undoCommand';
import * as fs from 'fs';
import * as vscode from 'vscode';
import { gitHost, askModal } from './branchHost';
import { executeBranch } from './branch';
import { Dispatcher } from './dispatcher';
import { EditExecutor } from './executors/edit';
import { workspaceRoots } from './executors/files';
import { KnowledgeExecutor } from './executors/knowledge';
import { executeRead } from './executors/read';
import { RunExecutor } from './executors/run';
import { RETIRED_FAST_MESSAGE, terminalMode } from './executors/terminalmode';
import { executeStat } from './executors/stat';
import { executeWrite } from './executors/write';
import { SessionManager } from './manager';
import { registerFrame } from './protocol';
import { sessionsDir } from './session';
import { Ui } from './ui';
import { parseConnectUri } from './uri';
import { ReviewController } from './review/controller';
import { ConsentPrompter } from './consent';
import { ConsentView, OPEN_COMMAND } from './consentUi';

let manager: SessionManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const ui = new Ui();
  const log = (line: string) => ui.log(line);
  const version = String(context.extension.packageJSON.version ?? '0.0.0');
  const run = newRunExecutor(log);
  noteRetiredMode(context, log);
  const knowledge = new KnowledgeExecutor(); // §3.6; also remembers the agent's changes for diagnostics
  const edit = new EditExecutor();
  const review = new ReviewController(edit.history, log); // §3.11: write/edit as proposals when the backend asks
  const consentView = new ConsentView(); // §3.13 + issue 42: the question box, its status bar count, its documents
  const consent = new ConsentPrompter(consentView, log);
  const dispatcher = newDispatcher(ui, run, knowledge, edit, review, consent);
  const folders = new Folders();
  const dir = sessionsDir();
  manager = newManager(dir, version, folders, dispatcher, ui, run);
  const connect = connectCommand(manager, folders, log);

  context.subscriptions.push(
    ui,
    run,
    knowledge,
    review,
    consentView,
    vscode.commands.registerCommand(OPEN_COMMAND, () => consent.reopen()),
    ...commandsAndHandlers(manager, folders, connect, ui, context),
    { dispose: () => manager?.dispose() },
  );

  log(
    `oh extension ${version} active in ${vscode.env.appName} ${vscode.version}; watching ${dir} (no connection until a session for this window appears)`,
  );
  if (vscode.env.remoteName && !fs.existsSync(dir)) {
    // A remote window (Remote-SSH, WSL, containers): this extension host is on the remote, and no oh ran here yet.
    log(
      `this window's extensions run on the remote (${vscode.env.remoteName}) and no oh has run there (${dir} does not exist): ` +
        "install and start oh in this window's terminal (pipx install oh-editor-runtime; oh vscode install; oh start --runtime vscode)",
    );
  }
  void folders.refresh().then(() => manager!.start());
}

/**
 * A settings file that still says `oh.terminalMode: fast` (retired in issue 26): `engine` is used, the log
 * says so each time, and the user is asked once (per machine) whether to update the setting where it is set.
 */
function noteRetiredMode(context: vscode.ExtensionContext, log: (line: string) => void): void {
  const config = vscode.workspace.getConfiguration('oh');
  if (!terminalMode(config.get<string>('terminalMode')).retired) return;
  log('setting oh.terminalMode = fast: that mode was retired; agent terminals use "engine" (oh\'s shell engine)');
  const key = 'oh.retiredFastModeSaid';
  if (context.globalState.get<boolean>(key)) return;
  void context.globalState.update(key, true);
  void vscode.window.showInformationMessage(RETIRED_FAST_MESSAGE, 'Use "engine"').then(async (choice) => {
    if (choice !== 'Use "engine"') return;
    const where = config.inspect<string>('terminalMode');
    const target =
      where?.workspaceFolderValue === 'fast'
        ? vscode.ConfigurationTarget.WorkspaceFolder
        : where?.workspaceValue === 'fast'
          ? vscode.ConfigurationTarget.Workspace
          : vscode.ConfigurationTarget.Global;
    await config.update('terminalMode', 'engine', target);
  });
}

/** The `run` executor, with the two questions it may ask the user. */
function newRunExecutor(log: (line: string) => void): RunExecutor {
  return new RunExecutor({
    log,
    confirmCommands: () => vscode.workspace.getConfiguration('oh').get<boolean>('confirmCommands', false),
    terminalMode: () => vscode.workspace.getConfiguration('oh').get<string>('terminalMode', 'engine'),
    userShell: () =>
      vscode.workspace.getConfiguration('oh').get<boolean>('userShell', true) && process.env.OH_USER_SHELL !== '0',
    sandbox: () => vscode.workspace.getConfiguration('oh').get<string>('sandbox', ''),
    askInterrupt: async (name, command) => {
      const choice = await vscode.window.showWarningMessage(
        `oh: the backend went away while the agent's command \`${command.slice(0, 200)}\` was still running in the "${name}" terminal.`,
        'Interrupt it',
        'Leave it running',
      );
      return choice === 'Interrupt it';
    },
  });
}

/** Every action kind to its executor; the UI's action list follows each one. */
function newDispatcher(
  ui: Ui,
  run: RunExecutor,
  knowledge: KnowledgeExecutor,
  edit: EditExecutor,
  review: ReviewController,
  consent: ConsentPrompter,
): Dispatcher {
  let actionSeq = 0;
  const keys = new WeakMap<object, number>();
  return new Dispatcher(
    {
      run: (a, signal, ctx) => run.execute(a, signal, ctx),
      read: (a, signal, ctx) => executeRead(a, signal, ctx),
      write: async (a, signal, ctx) => knowledge.afterChange(a, await review.route(a, signal, ctx, executeWrite)),
      edit: async (a, signal, ctx) =>
        knowledge.afterChange(a, await review.route(a, signal, ctx, (x, s, c) => edit.execute(x, s, c))),
      stat: (a, signal, ctx) => executeStat(a, signal, ctx),
      job: (a, signal, ctx) => run.executeJob(a, signal, ctx),
      diagnostics: (a, signal) => knowledge.diagnostics(a, signal),
      open: (a) => knowledge.open(a),
      editors: (a) => knowledge.editors(a),
      symbols: (a) => knowledge.symbols(a),
      definition: (a) => knowledge.definition(a),
      references: (a) => knowledge.references(a),
      branch: (a, signal, ctx) => executeBranch(a, gitHost, askModal, ctx?.workspace, signal), // §3.12: before an agent's first change
    },
    {
      isTrusted: () => vscode.workspace.isTrusted,
      onStart: (a, summary) => {
        keys.set(a, ++actionSeq);
        ui.actionStarted(actionSeq, a.kind, summary);
      },
      onFinish: (a, summary, outcome, exitCode, ms) =>
        ui.actionFinished(keys.get(a) ?? 0, a.kind, summary, outcome, exitCode, ms),
      agentGone: (shell, ctx) => run.agentGone(shell, ctx),
      // Consent (§3.13): the backend asks before an agent's action runs; the question box answers it.
      approvalRequested: (row, ctx) => void consent.request(row, ctx),
      approvalClosed: (id) => consent.closed(id),
    },
  );
}

/** The window's folders as real paths: the register frame is built synchronously, so they are kept current. */
class Folders {
  current: string[] = [];

  async refresh(): Promise<void> {
    this.current = (await workspaceRoots()).roots.map((r) => r.real);
  }
}

function newManager(
  dir: string,
  version: string,
  folders: Folders,
  dispatcher: Dispatcher,
  ui: Ui,
  run: RunExecutor,
): SessionManager {
  const log = (line: string) => ui.log(line);
  return new SessionManager({
    dir,
    folders: async () => (await workspaceRoots()).roots.map((r) => r.real),
    registerFrame: (s) =>
      registerFrame({
        session: s.instance_id,
        workspaceFolders: folders.current,
        editorName: vscode.env.appName,
        editorVersion: vscode.version,
        editorPid: process.pid,
        extensionVersion: version,
      }),
    handler: dispatcher,
    log,
    onStatus: (s) => ui.setConnections(s),
    onBackendGone: (backend, s) => {
      log(
        `oh ${s.instance_id} is gone (pid ${s.pid}); its terminals end with it. Start it again: oh start --runtime vscode`,
      );
      ui.backendEnded({ workspace: s.workspace, pid: s.pid });
      run.backendGone(backend);
    },
    warn: (m) => void vscode.window.showWarningMessage(m),
    extensionVersion: version,
  });
}

/** "oh: Connect to backend" and the connect URI: connect now, or say why nothing matched. */
function connectCommand(
  sessions: SessionManager,
  folders: Folders,
  log: (line: string) => void,
): (sessionId?: string) => Promise<void> {
  return async (sessionId?: string) => {
    await folders.refresh();
    const { matched, elsewhere, refused } = await sessions.connectNow(sessionId);
    if (matched.length) {
      log(`connect requested: ${matched.map((s) => `${s.instance_id} (port ${s.port})`).join(', ')}`);
      return;
    }
    if (elsewhere.length) {
      const s = elsewhere[0];
      void vscode.window.showWarningMessage(
        `oh: the backend ${s.instance_id} serves ${s.workspace}, which is not a folder of this window. Open that folder to connect.`,
      );
      return;
    }
    if (refused.length) {
      // The user asked to connect and a session file (or its directory) was refused: say why here too.
      void vscode.window.showWarningMessage(`oh: ${refused[0]}`);
      return;
    }
    // A remote window's extension host (Remote-SSH, WSL, containers) sees only the remote's session files.
    const remote = vscode.env.remoteName
      ? ` This window's extensions run on the remote (${vscode.env.remoteName}), so oh must run there: in this window's terminal, pipx install oh-editor-runtime, then oh vscode install.`
      : '';
    void vscode.window.showInformationMessage(
      (sessionId
        ? `oh: no running backend with id ${sessionId}.`
        : 'oh: no running backend for this window. Start one in this workspace: oh start --runtime vscode.') + remote,
    );
  };
}

/** The commands, the URI handler and the workspace listeners, each a disposable. */
function commandsAndHandlers(
  sessions: SessionManager,
  folders: Folders,
  connect: (sessionId?: string) => Promise<void>,
  ui: Ui,
  context: vscode.ExtensionContext,
): vscode.Disposable[] {
  const log = (line: string) => ui.log(line);
  return [
    vscode.commands.registerCommand('oh.connect', () => connect()),
    vscode.commands.registerCommand('oh.disconnect', () => {
      const n = sessions.disconnectAll();
      log(
        n
          ? `disconnected by the user (${n} backend${n > 1 ? 's' : ''}); "oh: Connect to backend" reconnects`
          : 'disconnect: nothing was connected',
      );
    }),
    vscode.commands.registerCommand('oh.showLog', () => ui.show()),
    vscode.commands.registerCommand('oh.revertAction', () => revertAgentAction(sessions.connections(), log)),
    vscode.window.registerUriHandler({
      handleUri(uri: vscode.Uri) {
        const request = parseConnectUri(uri.path, uri.query);
        if (!request) {
          log(
            `ignored URI with path ${JSON.stringify(uri.path.slice(0, 80))} (only /connect?session=<instance id> is handled)`,
          );
          return;
        }
        void connect(request.session);
      },
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('oh.confirmCommands')) {
        log(
          `setting oh.confirmCommands = ${vscode.workspace.getConfiguration('oh').get<boolean>('confirmCommands', false)}`,
        );
      }
      if (e.affectsConfiguration('oh.terminalMode')) {
        log(
          `setting oh.terminalMode = ${vscode.workspace.getConfiguration('oh').get<string>('terminalMode', 'engine')} (for agent terminals opened from now on)`,
        );
        noteRetiredMode(context, log);
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(async () => {
      await folders.refresh();
      await sessions.foldersChanged();
    }),
  ];
}

export function deactivate(): void {
  manager?.dispose();
  manager = undefined;
}
