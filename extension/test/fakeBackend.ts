// A minimal stand-in for the backend's editor leg (docs/protocol.md §2, §4), for connection and
// manager tests: real WebSocket handshake checks (Origin -> 403, bad token -> 401), registration,
// and hooks to send actions and close with any code. Also counts raw TCP connects.
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

export interface Peer {
  ws: WebSocket;
  headers: http.IncomingHttpHeaders;
  register: Record<string, unknown>;
  frames: Array<Record<string, unknown> | string>;
}

export class FakeBackend {
  readonly server: http.Server;
  readonly wss: WebSocketServer;
  token: string;
  port = 0;
  tcpConnects = 0;
  upgrades: http.IncomingHttpHeaders[] = [];
  refused: number[] = [];
  peers: Peer[] = [];
  registerAnswer: (frame: Record<string, unknown>) => Record<string, unknown> | null = (f) => ({
    type: 'registered',
    editor_id: `e${this.peers.length}`,
    instance_id: String(f.session ?? 'x'),
    protocol: 1,
    workspace: '/w',
  });
  private waiters: Array<() => void> = [];

  constructor(token = 'secret-token-123456') {
    this.token = token;
    this.server = http.createServer((_req, res) => {
      res.writeHead(426);
      res.end();
    });
    this.server.on('connection', () => this.tcpConnects++);
    this.wss = new WebSocketServer({ noServer: true });
    this.server.on('upgrade', (req, socket, head) => {
      this.upgrades.push(req.headers);
      const refuse = (code: number) => {
        this.refused.push(code);
        socket.end(`HTTP/1.1 ${code} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      };
      if (req.headers.origin !== undefined) return refuse(403);
      if (req.headers.authorization !== `Bearer ${this.token}`) return refuse(401);
      if (req.url !== '/v1/editor') return refuse(404);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, req.headers));
    });
  }

  async listen(port = 0): Promise<number> {
    await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this.port;
  }

  private onConnection(ws: WebSocket, headers: http.IncomingHttpHeaders): void {
    ws.once('message', (data) => {
      const register = JSON.parse(String(data));
      const peer: Peer = { ws, headers, register, frames: [] };
      const answer = this.registerAnswer(register);
      if (!answer) return;
      ws.send(JSON.stringify(answer));
      if (answer.type !== 'registered') {
        ws.close(4400, 'bad registration');
        return;
      }
      this.peers.push(peer);
      ws.on('message', (d, isBinary) => {
        const text = String(d);
        try {
          peer.frames.push(isBinary ? text : JSON.parse(text));
        } catch {
          peer.frames.push(text);
        }
        this.wake();
      });
      ws.on('close', () => this.wake());
      this.wake();
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits (bounded) until `cond` holds, re-checking on every event. */
  async until(cond: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 25);
      });
    }
  }

  get livePeers(): Peer[] {
    return this.peers.filter((p) => p.ws.readyState === WebSocket.OPEN);
  }

  async close(): Promise<void> {
    for (const p of this.peers) p.ws.terminate();
    this.wss.close();
    this.server.closeAllConnections?.();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
