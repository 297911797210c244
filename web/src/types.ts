// JSON shapes of the Drover API the dashboard reads (api/*.go, hub store
// types). Only the fields the views use are listed.

export interface RuntimeConfig {
  mode: 'hub' | 'controller';
  name?: string;
  version?: string;
}

export interface Capabilities {
  superuser: boolean;
  'audit-viewer': boolean;
  'admin-orgs': string[] | null;
  'add-model': boolean;
}

export interface WhoAmI {
  user: string;
  access: string;
  can?: Capabilities;
}

export interface Access {
  object: string;
  read: boolean;
  write: boolean;
  admin: boolean;
}

export interface ControllerRow {
  uuid: string;
  name: string;
  org?: string;
  region?: string;
  cloud?: string;
  'api-addresses'?: string[];
  status?: string;
  health?: Record<string, unknown>;
  'last-seen'?: string;
  deprecated?: boolean;
  version?: string;
  nodes?: { id: string; 'api-address': string; voter: boolean; leader: boolean; unreachable?: boolean; lag?: number }[];
}

export interface CharmInUse {
  application: string;
  charm: string;
  revision: number;
  sha256: string;
  units: number;
}

export interface ModelRow {
  uuid: string;
  name: string;
  owner: string;
  life?: string;
  status?: string | { status: string; message?: string };
  org?: string;
  controller?: string;
  'controller-uuid'?: string;
  'controller-status'?: string;
  cloud?: string;
  region?: string;
  'application-count'?: number;
  'unit-count'?: number;
  'machine-count'?: number;
  charms?: CharmInUse[];
  // The phase of the model's latest migration (absent: never migrated).
  'migration-phase'?: string;
}

export interface FederationKey {
  kind: 'controller' | 'model';
  id: string;
}

export interface FederationFrame {
  type: 'reset' | 'delta' | 'keepalive';
  index: number;
  controllers?: ControllerRow[];
  models?: ModelRow[];
  removed?: FederationKey[];
}

export interface StatusDetail {
  current: string;
  message?: string;
  since?: string;
  version?: string;
}

export interface UnitStatus {
  'workload-status': StatusDetail;
  'juju-status': StatusDetail;
  leader?: boolean;
  machine?: string;
  'open-ports'?: string[];
  'public-address'?: string;
  subordinates?: Record<string, UnitStatus>;
}

export interface ApplicationStatus {
  charm: string;
  'charm-name': string;
  'charm-rev': number;
  'charm-sha256'?: string;
  exposed: boolean;
  scale?: number;
  'application-status': StatusDetail;
  'subordinate-to'?: string[];
  units?: Record<string, UnitStatus>;
  relations?: Record<string, { 'related-application': string; interface: string; scope: string }[]>;
}

export interface MachineStatus {
  'juju-status': StatusDetail;
  'machine-status': StatusDetail;
  'dns-name'?: string;
  'ip-addresses'?: string[];
  'instance-id': string;
  base?: { name: string; channel: string };
}

export interface RelationStatus {
  'relation-id': number;
  provider: string;
  requirer: string;
  interface: string;
  type: string;
  status: string;
  message?: string;
}

export interface FullStatus {
  model: { name: string; uuid: string; controller: string; cloud: string; region?: string; version: string; 'model-status': StatusDetail };
  machines: Record<string, MachineStatus> | null;
  applications: Record<string, ApplicationStatus> | null;
  relations?: RelationStatus[];
  offers?: Record<string, Record<string, unknown>>;
  index: number;
}

export interface Status {
  status: string;
  message?: string;
  since?: string;
}

export interface Endpoint {
  name: string;
  role: string;
  interface: string;
  scope: string;
}

export interface Task {
  id: string;
  receiver: string;
  action: string;
  status: string;
  message?: string;
  results?: Record<string, unknown>;
  log?: { time: string; message: string }[];
  enqueued?: string;
  completed?: string;
}

export interface WatchDelta {
  kind: string;
  key: string;
  op: 'upsert' | 'delete';
  object?: any;
}

export interface WatchFrame {
  type: 'reset' | 'delta' | 'keepalive';
  index: number;
  status?: FullStatus;
  deltas?: WatchDelta[];
  mark?: string;
}

export interface ConfigOption {
  type: string;
  description?: string;
  default?: unknown;
  value?: unknown;
  source: string;
}

export interface ApplicationConfig {
  application: string;
  charm: string;
  settings: Record<string, ConfigOption>;
}

export interface AuditEntry {
  id: number;
  at: string;
  'identity-id'?: string;
  actor?: string;
  org?: string;
  operation: string;
  method?: string;
  path?: string;
  'model-uuid'?: string;
  model?: string;
  'controller-uuid'?: string;
  controller?: string;
  status?: number;
  result: string;
  details?: Record<string, unknown>;
  'remote-addr'?: string;
}

export interface Migration {
  id: string;
  'model-uuid': string;
  'model-name': string;
  'source-controller': string;
  'target-controller': string;
  phase: string;
  message?: string;
  failure?: string;
  'abort-requested'?: boolean;
  agents: { ok: number; failed: number; pending: number; reasons?: Record<string, string> };
  'requested-by': string;
  'started-at': string;
  'updated-at': string;
  'ended-at'?: string;
}

export interface MigrationEvent {
  seq: number;
  at: string;
  kind: string;
  phase: string;
  attempt: number;
  detail?: string;
}

export interface ReviewedGrant {
  subject: string;
  'subject-name': string;
  relation: string;
  object: string;
  'object-name': string;
  org: string;
  since: string;
}

export interface CharmPlacement extends CharmInUse {
  org: string;
  controller: string;
  'controller-uuid': string;
  region: string;
  'model-uuid': string;
  model: string;
}

export interface ActivityBucket {
  start: string;
  operation: string;
  result: string;
  count: number;
}
