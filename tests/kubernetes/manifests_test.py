#!/usr/bin/env python3
"""deploy/kubernetes/ against the programs (docs/deploy.md, Kubernetes).

  manifests_test.py SOURCE_DIR COORDINATOR AGENT WORKER CLI
  manifests_test.py --self-test COORDINATOR AGENT

1. The manifests hold what the deployment needs: the coordinator's StatefulSet with a
   volume claim for its store and its Service, agent DaemonSets (the GPU one with a
   nodeSelector, tolerations and a GPU limit), the Secrets' volumes, the probes, and
   requests == limits on the agents' containers.
2. Every flag of a benchfleet program's command line is one its --help lists; an unknown
   one fails naming the flag, the container and the file.
3. The containers' command lines run as written against a local fleet: only the program
   paths, the in-cluster paths (under a temporary root per pod), the Service's host name
   (127.0.0.1) and the ports (free local ones) are replaced. Keys are made with
   `benchfleet keygen`. The init containers run first, the coordinator and a CPU agent
   become ready by their probes, and the CLI, with a key of its own, sees the agent.
Exits 77 (skipped) without python3-yaml.
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import yaml
except ImportError:
    print("manifests_test: python3-yaml is not installed here; skipped", file=sys.stderr)
    sys.exit(77)

PROGRAMS = ("benchfleet-coordinator", "benchfleet-agent", "benchfleet-worker", "benchfleet")
SERVICE_HOST = "benchfleet-coordinator"


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def load(directory):
    """Every YAML document under DIRECTORY, as (file, document)."""
    docs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.yaml"))):
        with open(path) as f:
            docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d]
    return docs


def pod_containers(doc):
    spec = doc["spec"]["template"]["spec"]
    return spec.get("initContainers", []), spec["containers"]


def known_flags(program):
    """The long flags PROGRAM's --help lists."""
    out = subprocess.run([program, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"(?:^|[ ,])(--[a-z][a-z0-9-]*)", out, re.M))


def check_flags(file, container, flags_of):
    """Each flag of CONTAINER's command, if it runs a benchfleet program, is one it knows."""
    command = container.get("command", []) + container.get("args", [])
    program = os.path.basename(command[0]) if command else ""
    if program not in flags_of:
        return
    for arg in command[1:]:
        if arg.startswith("--"):
            flag = arg.split("=", 1)[0]
            check(flag in flags_of[program], f"{file}: container {container['name']}: "
                  f"{program} has no flag {flag} ({program} --help)")


def check_manifests(docs, flags_of):
    kinds = {}
    for file, doc in docs:
        kinds.setdefault(doc["kind"], []).append((file, doc))
    check(kinds.get("Kustomization"), "no kustomization.yaml")
    sets = kinds.get("StatefulSet", [])
    check(len(sets) == 1, "expected one StatefulSet, the coordinator")
    coordinator = sets[0][1]
    check(coordinator["spec"]["replicas"] == 1, "the coordinator runs one replica")
    claims = [c["metadata"]["name"] for c in coordinator["spec"].get("volumeClaimTemplates", [])]
    mounts = {m["name"]: m["mountPath"] for c in pod_containers(coordinator)[1]
              for m in c.get("volumeMounts", [])}
    check(any(mounts.get(c) == "/var/lib/benchfleet" for c in claims),
          "the coordinator's store (/var/lib/benchfleet) is not on a volume claim")
    ports = {p["port"] for _, s in kinds.get("Service", [])
             if s["metadata"]["name"] == SERVICE_HOST for p in s["spec"]["ports"]}
    check({5555, 5556} <= ports, f"Service {SERVICE_HOST} does not expose 5555 and 5556")
    daemons = kinds.get("DaemonSet", [])
    gpu = [d for _, d in daemons if any("nvidia.com/gpu" in c["resources"].get("limits", {})
                                        for c in pod_containers(d)[1])]
    check(len(daemons) >= 2 and gpu, "expected agent DaemonSets for CPU nodes and a GPU pool")
    for d in gpu:
        spec = d["spec"]["template"]["spec"]
        check(spec.get("nodeSelector"), f"{d['metadata']['name']}: no nodeSelector")
        check(any(t.get("key") == "nvidia.com/gpu" for t in spec.get("tolerations", [])),
              f"{d['metadata']['name']}: no toleration for nvidia.com/gpu")
    for file, doc in sets + daemons:
        name = doc["metadata"]["name"]
        spec = doc["spec"]["template"]["spec"]
        secrets = [v for v in spec["volumes"] if "secret" in v]
        check(secrets, f"{file}: {name} mounts no Secret (its CURVE keys)")
        inits, containers = pod_containers(doc)
        for c in inits + containers:
            check_flags(file, c, flags_of)
        main = containers[0]
        check("readinessProbe" in main and "livenessProbe" in main, f"{file}: {name}: no probes")
        command = main["command"]
        check("--curve-key" in command, f"{file}: {name} runs without CURVE")
        if doc["kind"] == "DaemonSet":
            # Guaranteed QoS (exclusive cores under the static CPU manager): every
            # container's requests equal its limits for cpu and memory.
            for c in inits + containers:
                r = c.get("resources", {})
                for what in ("cpu", "memory"):
                    check(r.get("requests", {}).get(what) is not None and
                          r.get("requests", {}).get(what) == r.get("limits", {}).get(what),
                          f"{file}: {name}: container {c['name']}: {what} requests != limits")
    return coordinator, [d for _, d in daemons if d not in gpu][0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pod:
    """A pod's containers run as local processes, its paths under ROOT."""

    def __init__(self, doc, root, programs, ports):
        self.doc, self.root, self.programs, self.ports = doc, root, programs, ports

    def path(self, p):
        return self.root + p

    def argv(self, container):
        env = {}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            else:
                field = e["valueFrom"]["fieldRef"]["fieldPath"]
                env[e["name"]] = {"spec.nodeName": "node-a", "status.podIP": "127.0.0.1"}[field]
        out = []
        for arg in container["command"] + container.get("args", []):
            arg = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], arg)
            if os.path.basename(arg) in self.programs and arg.startswith("/usr/"):
                arg = self.programs[os.path.basename(arg)]
            elif arg.startswith("/"):
                arg = self.path(arg)
            arg = arg.replace(f"//{SERVICE_HOST}:", "//127.0.0.1:")
            arg = re.sub(r":(\d+)$", lambda m: ":" + str(self.ports.get(int(m.group(1)),
                                                                         m.group(1))), arg)
            out.append(arg)
        return out

    def mount_secret(self, name, files):
        """The Secret NAME's files where the pod mounts its volume (mode 0440, as asked)."""
        spec = self.doc["spec"]["template"]["spec"]
        volume = [v["name"] for v in spec["volumes"] if v.get("secret", {}).get("secretName") == name]
        check(volume, f"{self.doc['metadata']['name']} mounts no Secret {name}")
        for c in spec.get("initContainers", []) + spec["containers"]:
            for m in c.get("volumeMounts", []):
                if m["name"] == volume[0]:
                    os.makedirs(self.path(m["mountPath"]), exist_ok=True)
                    for key, source in files.items():
                        target = os.path.join(self.path(m["mountPath"]), key)
                        shutil.copyfile(source, target)
                        os.chmod(target, 0o440)

    def start(self, log):
        spec = self.doc["spec"]["template"]["spec"]
        host_paths = {v["name"] for v in spec["volumes"] if "hostPath" in v}  # the host's own
        for c in spec.get("initContainers", []) + spec["containers"]:
            for m in c.get("volumeMounts", []):
                if m["name"] not in host_paths:
                    os.makedirs(self.path(m["mountPath"]), exist_ok=True)
        os.makedirs(self.path("/tmp"), exist_ok=True)
        for c in spec.get("initContainers", []):
            done = subprocess.run(self.argv(c), capture_output=True, text=True)
            check(done.returncode == 0, f"init container {c['name']}: {done.stderr}")
        main = spec["containers"][0]
        return subprocess.Popen(self.argv(main), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True), main

    def probe(self, container):
        """The readiness probe, as the kubelet runs it."""
        probe = container["readinessProbe"]
        if "exec" in probe:
            return subprocess.run(self.argv({"command": probe["exec"]["command"]})).returncode == 0
        get = probe["httpGet"]
        port = get["port"]
        if isinstance(port, str):
            port = [p["containerPort"] for p in container["ports"] if p["name"] == port][0]
        url = f"http://127.0.0.1:{self.ports[port]}{get['path']}"
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False


def wait(condition, what, deadline_s, logs):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.1)  # polls the daemons' probes until the deadline
    raise Failure(f"{what} within {deadline_s}s; logs:\n" + "".join(open(l).read() for l in logs))


def run_fleet(coordinator_doc, agent_doc, programs, work):
    cli = programs["benchfleet"]
    keys = os.path.join(work, "keys")
    os.makedirs(keys)
    for who in ("coordinator", "agent", "client"):
        subprocess.run([cli, "keygen", os.path.join(keys, who)], check=True, capture_output=True)
    pub = lambda who: open(os.path.join(keys, who + ".pub")).read().strip()
    allow = os.path.join(keys, "allow-list")
    with open(allow, "w") as f:
        f.write(f"{pub('agent')} agent k8s agents\n{pub('client')} operator ci\n")
    ports = {p: free_port() for p in (5555, 5556, 9464, 9465)}
    coordinator = Pod(coordinator_doc, os.path.join(work, "coordinator-0"), programs, ports)
    agent = Pod(agent_doc, os.path.join(work, "agent-node-a"), programs, ports)
    coordinator.mount_secret("benchfleet-coordinator-keys",
                             {"coordinator.key": os.path.join(keys, "coordinator.key"),
                              "allow-list": allow})
    agent.mount_secret("benchfleet-agent-keys", {"agent.key": os.path.join(keys, "agent.key"),
                                                 "coordinator.pub": os.path.join(keys, "coordinator.pub")})
    logs = [os.path.join(work, n + ".log") for n in ("coordinator", "agent")]
    procs = []
    try:
        with open(logs[0], "w") as log:
            proc, main = coordinator.start(log)
            procs.append(proc)
            print("coordinator:", " ".join(proc.args))
            wait(lambda: coordinator.probe(main), "the coordinator's readiness probe", 20, logs)
        with open(logs[1], "w") as log:
            proc, main = agent.start(log)
            procs.append(proc)
            print("agent:", " ".join(proc.args))
            wait(lambda: agent.probe(main), "the agent's readiness probe", 40, logs)
        metrics = "http://127.0.0.1:%d/metrics" % ports[9465]
        with urllib.request.urlopen(metrics, timeout=2) as reply:
            check(b"benchfleet_agent" in reply.read(), f"{metrics} shows no agent metrics")
        # The CLI over CURVE with an operator key sees the agent registered under its
        # node's name. (No sweep: an agent calibrates its host first, as written, which
        # takes a minute on a busy machine; processes_test runs sweeps.)
        client = [cli, "--coordinator", "tcp://127.0.0.1:%d" % ports[5555],
                  "--curve-key", os.path.join(keys, "client.key"),
                  "--server-key", os.path.join(keys, "coordinator.pub")]
        done = subprocess.run(client + ["status"], capture_output=True, text=True, timeout=30)
        check(done.returncode == 0 and "node-a" in done.stdout,
              f"benchfleet status does not list node-a: {done.stdout}{done.stderr}")
        print(done.stdout)
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def self_test(coordinator, agent):
    """A manifest with a flag the agent does not know fails, naming it."""
    flags_of = {"benchfleet-coordinator": known_flags(coordinator),
                "benchfleet-agent": known_flags(agent)}
    check("--ready-file" in flags_of["benchfleet-agent"], "--help was not parsed")
    bogus = {"name": "agent", "command": ["/usr/local/bin/benchfleet-agent", "--name", "a",
                                          "--cpu-set=0-3"]}
    try:
        check_flags("bogus.yaml", bogus, flags_of)
    except Failure as e:
        check("--cpu-set" in str(e) and "bogus.yaml" in str(e) and "agent" in str(e),
              f"the failure does not name the flag, file and container: {e}")
        print("manifests_test --self-test: caught:", e)
        return
    raise Failure("a bogus flag --cpu-set was not caught")


def main(argv):
    if argv[1:2] == ["--self-test"]:
        self_test(argv[2], argv[3])
        return
    source, coordinator, agent, worker, cli = argv[1:6]
    programs = dict(zip(PROGRAMS, (coordinator, agent, worker, cli)))
    flags_of = {p: known_flags(programs[p]) for p in ("benchfleet-coordinator", "benchfleet-agent")}
    docs = load(os.path.join(source, "deploy", "kubernetes"))
    coordinator_doc, cpu_agent_doc = check_manifests(docs, flags_of)
    print("manifests_test: the manifests hold what is asked and only flags the programs know")
    work = tempfile.mkdtemp(prefix="benchfleet-k8s-")
    try:
        run_fleet(coordinator_doc, cpu_agent_doc, programs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("manifests_test: the containers' command lines run a fleet")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except Failure as e:
        print("manifests_test: " + str(e), file=sys.stderr)
        sys.exit(1)
