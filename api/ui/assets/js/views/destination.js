// Destinations of the subscription form (API.md §15): the delivery picker
// (a webhook, or one of the five broker types), each type's fields, and
// the destination object the form sends. Every field sits in a .field
// whose data-pointer is its problem pointer (/destination/<field>), so the
// API's 422 lands next to it (dom.js placeErrors).
//
// A write-only secret is shown as the API shows it, "***", in a password
// input (a PEM key in a textarea); sent back unchanged it keeps the stored
// value, a typed value replaces it and an emptied field removes it. A
// password inside a url stays in the url as the API masks it
// (amqp://user:***@host/vhost), under the same rule.
import { h } from '../dom.js';

/** MASK is how the API shows a stored secret. */
export const MASK = '***';

/** WEBHOOK is the picker's value for an HTTP target (?destinationType=webhook). */
export const WEBHOOK = 'webhook';

/**
 * TYPES lists the broker types in the picker's order, each with its
 * fields: name (the member, a path with / for nested ones), label,
 * required, kind (text, secret, list, bool, mechanism, tls, pem), hint,
 * placeholder.
 */
export const TYPES = [
  { type: 'sqs', label: 'Amazon SQS', fields: [
    { name: 'queueUrl', label: 'Queue URL', required: true, placeholder: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo', hint: 'A .fifo queue gets the message group as MessageGroupId.' },
    { name: 'region', label: 'Region', required: true, placeholder: 'eu-west-1' },
    { name: 'endpoint', label: 'Endpoint', placeholder: 'http://127.0.0.1:4566', hint: 'Optional: an SQS-compatible endpoint instead of AWS\'s.' },
    { name: 'accessKeyId', label: 'Access key id' },
    { name: 'secretAccessKey', label: 'Secret access key', kind: 'secret' },
  ] },
  { type: 'kafka', label: 'Kafka', fields: [
    { name: 'brokers', label: 'Brokers', required: true, kind: 'list', placeholder: 'broker-1:9092, broker-2:9092', hint: 'host:port, comma-separated.' },
    { name: 'topic', label: 'Topic', required: true, placeholder: 'orders', hint: 'The message group is the record key (one group, one partition).' },
    { name: 'sasl/mechanism', label: 'SASL', kind: 'mechanism' },
    { name: 'sasl/username', label: 'SASL username', sasl: true },
    { name: 'sasl/password', label: 'SASL password', kind: 'secret', sasl: true },
    { name: 'tls', label: 'TLS', kind: 'tls' },
    { name: 'tls/clientCertificate', label: 'Client certificate (PEM)', kind: 'pem', tlsPart: true },
    { name: 'tls/clientKey', label: 'Client key (PEM)', kind: 'pem', secret: true, tlsPart: true },
    { name: 'tls/caCertificate', label: 'CA certificate (PEM)', kind: 'pem', tlsPart: true },
  ] },
  { type: 'rabbitmq', label: 'RabbitMQ', fields: [
    { name: 'url', label: 'URL', required: true, placeholder: 'amqps://user:password@rabbit.example.com:5671/vhost', hint: 'amqp:// or amqps://; the password in it is write-only (shown ***).' },
    { name: 'exchange', label: 'Exchange', required: true, always: true, placeholder: '(empty: the default exchange)', hint: 'Empty for the default exchange.' },
    { name: 'routingKey', label: 'Routing key', placeholder: '(default: the event type)' },
  ] },
  { type: 'nats', label: 'NATS', fields: [
    { name: 'url', label: 'URL', required: true, placeholder: 'nats://nats.example.com:4222', hint: 'nats:// or tls://.' },
    { name: 'subject', label: 'Subject', required: true, placeholder: 'orders.created' },
    { name: 'jetstream', label: 'JetStream (success is the stream\'s acknowledgement; off: core NATS, the publish flushed)', kind: 'bool', def: true },
    { name: 'token', label: 'Token', kind: 'secret' },
    { name: 'username', label: 'Username' },
    { name: 'password', label: 'Password', kind: 'secret' },
  ] },
  { type: 'pubsub', label: 'Google Pub/Sub', fields: [
    { name: 'project', label: 'Project', required: true, placeholder: 'my-project' },
    { name: 'topic', label: 'Topic', required: true, placeholder: 'orders' },
    { name: 'endpoint', label: 'Emulator endpoint', placeholder: '127.0.0.1:8085', hint: 'Optional host:port of an emulator: plaintext, no credentials.' },
    { name: 'credentialsJson', label: 'Service account key (JSON)', kind: 'secret', hint: 'The key file\'s JSON text; unused with an emulator endpoint.' },
  ] },
];

/** kindOf is the kind of a subscription or job: webhook, pull or a broker type. */
export function kindOf(s) {
  if (s.destination && s.destination.type) return s.destination.type;
  return s.delivery === 'pull' ? 'pull' : WEBHOOK;
}

/** kindOfTarget is the kind of a job's targetUrl: webhook for http(s),
 * else the broker type its scheme names (amqp: rabbitmq). */
export function kindOfTarget(url) {
  const scheme = String(url || '').split('://')[0].toLowerCase();
  if (!url || !String(url).includes('://')) return '';
  if (scheme === 'http' || scheme === 'https') return WEBHOOK;
  if (scheme === 'amqp' || scheme === 'amqps') return 'rabbitmq';
  return scheme;
}

/** kindBadge is the pill naming a delivery kind (webhook, kafka, …). */
export function kindBadge(kind) {
  return h('span', { class: 'tag dest dest-' + kind, 'data-kind': kind, title: kind === WEBHOOK ? 'HTTP webhook' : 'Delivered to ' + kind }, kind);
}

function get(obj, path) {
  let v = obj;
  for (const k of path.split('/')) {
    if (v === null || v === undefined || typeof v !== 'object') return undefined;
    v = v[k];
  }
  return v;
}

function set(obj, path, value) {
  const ks = path.split('/');
  let o = obj;
  for (const k of ks.slice(0, -1)) o = o[k] || (o[k] = {});
  o[ks[ks.length - 1]] = value;
}

/**
 * destinationFields builds the picker and every type's fields for the
 * stored destination d (as the API shows it, masked; null for none).
 * It returns { picker, groups (the elements to place), kind () (the
 * picked kind), body () (the destination object of the picked type),
 * onChange (fn) }. fieldFn(label, pointer, input, hint) wraps one input.
 */
export function destinationFields(d, fieldFn) {
  const current = d && d.type ? d.type : WEBHOOK;
  const picker = h('select', { id: 'deliveryType', name: 'deliveryType' },
    h('option', { value: WEBHOOK, selected: current === WEBHOOK }, 'Webhook (HTTP)'),
    TYPES.map((t) => h('option', { value: t.type, selected: current === t.type }, t.label + ' (' + t.type + ')')));
  const groups = {};
  const readers = {};
  for (const t of TYPES) {
    const stored = current === t.type ? d : null;
    const inputs = {};
    const els = [];
    for (const f of t.fields) {
      const id = 'dest-' + t.type + '-' + f.name.replace('/', '-');
      const v = stored ? get(stored, f.name) : undefined;
      const pointer = '/destination/' + f.name;
      const label = f.required ? [f.label, ' ', h('abbr', { class: 'req', title: 'required' }, '*')] : f.label;
      let el;
      switch (f.kind) {
        case 'secret':
          el = h('input', { id, name: id, type: 'password', autocomplete: 'new-password', spellcheck: 'false', value: v === undefined || v === null ? '' : String(v),
            'data-secret': 'true' });
          break;
        case 'pem':
          el = h('textarea', { id, name: id, rows: 3, class: 'mono', spellcheck: 'false', placeholder: f.secret ? '-----BEGIN PRIVATE KEY-----' : '-----BEGIN CERTIFICATE-----' },
            v === undefined || v === null ? '' : String(v));
          if (f.secret) el.dataset.secret = 'true';
          break;
        case 'list':
          el = h('input', { id, name: id, autocomplete: 'off', spellcheck: 'false', placeholder: f.placeholder || '', value: Array.isArray(v) ? v.join(', ') : '' });
          break;
        case 'bool':
          el = h('input', { id, name: id, type: 'checkbox', checked: v === undefined || v === null ? f.def : !!v });
          break;
        case 'mechanism':
          el = h('select', { id, name: id }, [['', 'None'], ['PLAIN', 'PLAIN'], ['SCRAM-SHA-256', 'SCRAM-SHA-256'], ['SCRAM-SHA-512', 'SCRAM-SHA-512']]
            .map(([val, l]) => h('option', { value: val, selected: (v || '') === val }, l)));
          break;
        case 'tls': {
          const mode = v === true || (v && typeof v === 'object' && !v.clientCertificate && !v.caCertificate && !v.clientKey) ? 'system' : v ? 'custom' : '';
          el = h('select', { id, name: id }, [['', 'Off'], ['system', 'On, system roots'], ['custom', 'On, with certificates']]
            .map(([val, l]) => h('option', { value: val, selected: mode === val }, l)));
          break;
        }
        default:
          el = h('input', { id, name: id, autocomplete: 'off', spellcheck: 'false', placeholder: f.placeholder || '', value: v === undefined || v === null ? '' : String(v) });
      }
      if (f.required) el.setAttribute('aria-required', 'true');
      inputs[f.name] = el;
      const hint = f.kind === 'secret' || f.secret ? (v === MASK ? 'Stored; shown as ***. Leave it to keep it, type a new one to replace it, empty it to remove it.' : 'Write-only.') : f.hint;
      const wrap = f.kind === 'bool' ?
        h('div', { class: 'field check', 'data-pointer': pointer }, h('label', {}, el, ' ', f.label)) :
        fieldFn(label, pointer, el, hint);
      if (f.sasl) wrap.dataset.sasl = 'true';
      if (f.tlsPart) wrap.dataset.tlsPart = 'true';
      els.push(wrap);
    }
    const group = h('div', { class: 'dest-group', 'data-dest-for': t.type }, h('div', { class: 'grid2' }, els));
    // Kafka: the SASL credentials show with a mechanism, the PEMs with custom TLS.
    const sub = () => {
      const mech = inputs['sasl/mechanism'];
      const tls = inputs.tls;
      for (const w of group.querySelectorAll('[data-sasl]')) w.hidden = !!mech && mech.value === '';
      for (const w of group.querySelectorAll('[data-tls-part]')) w.hidden = !!tls && tls.value !== 'custom';
    };
    for (const el of Object.values(inputs)) if (el.tagName === 'SELECT') el.addEventListener('change', sub);
    sub();
    groups[t.type] = group;
    readers[t.type] = () => {
      const out = { type: t.type };
      for (const f of t.fields) {
        const el = inputs[f.name];
        if (f.sasl || f.tlsPart) continue;
        switch (f.kind) {
          case 'bool':
            out[f.name] = el.checked;
            break;
          case 'list': {
            const items = el.value.split(/[\s,]+/).filter(Boolean);
            if (items.length || f.required) out[f.name] = items;
            break;
          }
          case 'mechanism':
            if (el.value) {
              const sasl = { mechanism: el.value, username: inputs['sasl/username'].value.trim() };
              if (inputs['sasl/password'].value !== '') sasl.password = inputs['sasl/password'].value;
              out.sasl = sasl;
            }
            break;
          case 'tls':
            if (el.value === 'system') out.tls = true;
            else if (el.value === 'custom') {
              const tls = {};
              for (const part of ['clientCertificate', 'clientKey', 'caCertificate']) {
                const pv = inputs['tls/' + part].value.trim();
                if (pv) tls[part] = pv;
              }
              out.tls = tls;
            }
            break;
          case 'secret':
            if (el.value !== '') set(out, f.name, el.value);
            break;
          default: {
            const tv = el.value.trim();
            if (tv !== '' || f.always) set(out, f.name, tv);
            else if (f.required) set(out, f.name, '');
          }
        }
      }
      return out;
    };
  }
  const all = h('fieldset', { id: 'destination-fields', 'data-pointer': '/destination' }, h('legend', {}, 'Destination'),
    Object.values(groups));
  const listeners = [];
  const show = () => {
    const k = picker.value;
    all.hidden = k === WEBHOOK;
    for (const [type, g] of Object.entries(groups)) g.hidden = type !== k;
    for (const fn of listeners) fn(k);
  };
  picker.addEventListener('change', show);
  return {
    picker,
    fieldset: all,
    kind: () => picker.value,
    body: () => (picker.value === WEBHOOK ? null : readers[picker.value]()),
    onChange: (fn) => { listeners.push(fn); fn(picker.value); },
    show,
  };
}
