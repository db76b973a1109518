"""The approvals page (issue 40): one HTML document, its style and script inline and allowed by hash in a
strict Content-Security-Policy (no external assets, no inline handlers, no eval). The script builds every
agent-written string as a text node (``textContent``), never as markup. Pure: ``page()`` and ``headers()``.
"""

from __future__ import annotations

import base64
import hashlib

_STYLE = """
:root{color-scheme:light dark;font:15px/1.4 system-ui,sans-serif}
body{margin:0 auto;max-width:56rem;padding:.5rem}
h1{font-size:1.2rem;margin:.3rem 0}h2{font-size:1rem;margin:1rem 0 .3rem}
.card{border:1px solid #8888;border-radius:.4rem;padding:.5rem;margin:.5rem 0}
.card:focus-within{outline:2px solid #36c}
pre{overflow:auto;max-height:40vh;white-space:pre;background:#8881;padding:.4rem;margin:.3rem 0}
.meta{font-size:.85rem;opacity:.85;overflow-wrap:anywhere}
.row{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin-top:.4rem}
button{font:inherit;padding:.45rem .8rem;min-height:2.5rem}
input{font:inherit;flex:1 1 10rem;min-width:0;padding:.4rem}
.rule{font-family:monospace;overflow-wrap:anywhere}
#status{font-size:.85rem}.err{color:#c33}
ul{padding-left:1.2rem}li{overflow-wrap:anywhere}
"""

_SCRIPT = r"""
"use strict";
const $=(t,c,x)=>{const e=document.createElement(t);if(c)e.className=c;if(x!==undefined)e.textContent=x;return e;};
const main=document.getElementById("main"),status=document.getElementById("status");
let ws=null,retry=500;
function say(t,bad){status.textContent=t;status.className=bad?"err":"";}
function send(o){if(ws&&ws.readyState===1)ws.send(JSON.stringify(o));else say("not connected",true);}
function pairForm(msg){
  main.replaceChildren();const f=$("form","card");
  f.append($("h2",null,"Pair this device"),
    $("p",null,"Run `oh approvals pair` where oh runs and type the code it prints."));
  const r=$("div","row"),i=$("input"),b=$("button",null,"Pair");
  i.id="code";i.autocomplete="one-time-code";i.setAttribute("aria-label","pairing code");
  b.type="submit";r.append(i,b);f.append(r);if(msg)f.append($("p","err",msg));
  f.addEventListener("submit",async e=>{e.preventDefault();
    const res=await fetch("/api/pair",{headers:{"X-OH-Pair-Code":i.value},credentials:"same-origin"});
    if(res.ok)start();else pairForm(await res.text());});
  main.append(f);i.focus();
}
function field(card,label,text){if(text)card.append($("div","meta",label+": "+text));}
function alwaysBox(c,q){
  const box=$("div","row"),ok=$("button","confirm","Save rule and approve");
  box.append($("span",null,"Saves: "),$("span","rule",q.always.join(", ")));
  ok.addEventListener("click",()=>send({op:"allow",id:q.id,always:true}));
  box.append(ok);c.append(box);ok.focus();
}
function question(q){
  const c=$("section","card");c.id=q.id;c.tabIndex=-1;
  const risk=q.security_risk?" · risk "+q.security_risk:"";
  c.append($("div","meta",q.id+" · "+(q.agent||q.agent_id)+" · "+q.kind+risk));
  c.append($("pre","cmd",q.command||q.what));
  field(c,"cwd",q.cwd);field(c,"why",q.reason);
  const env=Object.entries(q.env||{});
  if(env.length)c.append($("pre","env",env.map(([k,v])=>k+"="+v).join("\n")));
  if(q.detail)c.append($("pre","diff",q.detail));
  const r=$("div","row"),once=$("button","allow","Approve once");
  once.addEventListener("click",()=>send({op:"allow",id:q.id}));r.append(once);
  if(q.always&&q.always.length){const a=$("button","always","Always…");
    a.addEventListener("click",()=>alwaysBox(c,q));r.append(a);}
  const reason=$("input","reason"),rej=$("button","reject","Reject");
  reason.placeholder="reason (sent to the agent)";reason.setAttribute("aria-label","reason");
  rej.addEventListener("click",()=>send({op:"reject",id:q.id,reason:reason.value}));
  reason.addEventListener("keydown",e=>{if(e.key==="Enter")rej.click();});
  r.append(reason,rej);c.append(r);return c;
}
function line(d){
  return (d.at||"")+" "+(d.id||"")+" "+d.decision+" by "+d.by+": "+(d.what||"")+(d.reason?" ("+d.reason+")":"");
}
function render(s){
  main.replaceChildren();const n=s.pending.length;
  main.append($("h2",null,n?n+" waiting for you":"Nothing waits for you"));
  for(const q of s.pending)main.append(question(q));
  const ul=$("ul"),pl=$("ul");for(const d of s.recent)ul.append($("li",null,line(d)));
  for(const [k,v] of Object.entries(s.protections||{}))pl.append($("li",null,k+": "+v));
  main.append($("h2",null,"Recent decisions"),ul,$("h2",null,"Protections in force"),pl);
  document.title=(n?"("+n+") ":"")+"oh approvals";
}
function connect(){
  ws=new WebSocket((location.protocol==="https:"?"wss://":"ws://")+location.host+"/live");
  ws.onopen=()=>{say("connected");retry=500;};
  ws.onmessage=e=>{const m=JSON.parse(e.data);
    if(m.type==="state")render(m);else if(m.type==="result")say(m.text,!m.ok);};
  ws.onclose=()=>{ws=null;say("disconnected: reconnecting",true);setTimeout(start,retry);retry=Math.min(retry*2,1e4);};
}
async function start(){
  const me=await fetch("/api/me",{credentials:"same-origin"}).then(r=>r.json()).catch(()=>null);
  if(me&&me.paired)connect();else if(me){say("not paired",true);pairForm();}else setTimeout(start,retry);
}
document.addEventListener("keydown",e=>{
  if(e.target.tagName==="INPUT")return;
  const cards=[...document.querySelectorAll("section.card")],at=document.activeElement.closest("section.card");
  const i=cards.indexOf(at);
  if(e.key==="j"&&cards.length)cards[Math.min(i+1,cards.length-1)].focus();
  else if(e.key==="k"&&cards.length)cards[Math.max(i-1,0)].focus();
  else if(i>=0&&e.key==="a")cards[i].querySelector("button.allow").click();
  else if(i>=0&&e.key==="r")cards[i].querySelector("input.reason").focus();
});
start();
"""

_BODY = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width,initial-scale=1">'
    '<meta name="referrer" content="no-referrer"><title>oh approvals</title>'
    "<style>{style}</style></head><body><h1>oh approvals</h1>"
    '<div id="status" role="status" aria-live="polite">connecting…</div><main id="main"></main>'
    "<script>{script}</script></body></html>"
)


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


CSP = (
    "default-src 'none'; "
    f"script-src {_sha(_SCRIPT)}; style-src {_sha(_STYLE)}; "
    "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE = _BODY.format(style=_STYLE, script=_SCRIPT).encode("utf-8")


def headers() -> dict[str, str]:
    """Every response of the page's server carries these (the page and its small JSON/text answers)."""
    return {
        "Content-Security-Policy": CSP,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
    }
