// The fleet as the page shows it. Daemons on one PostgreSQL are nodes of one fleet, and each
// numbers its devices from 0: where the page has seen more than one node, a device is named
// "node / index"; a daemon alone keeps its plain indices (its one node is named once per view).

// The nodes named by `devices` (GET /api/v1/devices) and by `jobs` (a job names the node that
// runs or ran it), in order of first appearance.
export function nodesOf(devices = [], jobs = []) {
  const nodes = new Set();
  for (const d of devices) if (d.node) nodes.add(d.node);
  for (const j of jobs) if (j.node) nodes.add(j.node);
  return nodes;
}

// A device as the views name it: "b / 1" in a fleet, "1" alone.
export function deviceLabel(node, index, fleet) {
  return fleet && node ? `${node} / ${index}` : String(index);
}

// A job's requested placement (`requested_device`) in words: any, an index, a node and index,
// a node, a model.
export function placementText(p, fleet) {
  if (p === null || p === undefined || p === 'any') return 'any device';
  if (typeof p !== 'object') return `device ${p}`;
  if (p.node !== undefined && p.index !== undefined) return deviceLabel(p.node, p.index, true);
  if (p.node !== undefined) return `any device of ${p.node}`;
  if (p.model !== undefined) return `any ${p.model}`;
  return fleet ? JSON.stringify(p) : 'any device';
}
