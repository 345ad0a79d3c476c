"""A Kubernetes API emulator for integration tests: kmock's KubernetesEmulator plus what it lacks.

What kmock 0.8's emulator lacks and a real API server does: resourceVersions,
uid and creationTimestamp on create, ``metadata.namespace`` from the URL, PUT, the
``pods/{name}/binding`` subresource (sets ``spec.nodeName`` and ``PodScheduled=True``, answers
201 with a ``Status``, 409 when already bound or gated), ``/status`` patches that apply only
``.status``, equality label/field selectors, watches that resume from a resourceVersion, and an
in-stream ``ERROR`` 410 for a resourceVersion older than the last :meth:`ApiServer.compact`.
Injected error reactions pre-empt writes (they do not mutate the stored object). DELETE honours
``DeleteOptions.preconditions`` (uid, resourceVersion: 409 Conflict when they no longer match).

Validation: creates are checked like a real server's (``apivalidation.py``): every
``metadata.name`` and ``generateName`` against the kind's name rule (a DNS subdomain for all our
kinds), names generated like the server's (``prefix[:58]`` + 5 random characters), and
``events.k8s.io/v1`` Event bodies on create and on every PATCH/PUT. A rejected write answers the
real server's ``422 Invalid`` Status (``details.causes`` per field) and stores nothing; an
undecodable time answers 400 ``BadRequest``. Custom resources (``crds.py``: scheduler-plugins' PodGroup) are
pruned and validated against their CRD's schema on every write: unknown fields dropped and recorded in
``warnings`` (the real server's ``Warning`` header), wrong values a 422.

Paths of the ``namespaces`` resource itself (``/api/v1/namespaces``, ``/api/v1/namespaces/{name}``):
kmock 0.8's ``parse_path`` reads the segment after ``namespaces`` as a namespace and fails on the
list (500 ``ValueError``); :func:`_parse_path` reads them as the cluster-scoped resource, as the
real server routes them, and hands every other path to kmock's parser. Discovery of the core group
(``/api/v1``) names its ``groupVersion`` ``v1``, as the real server does (kmock 0.8: ``/v1``).
"""

# ruff: noqa
# mypy: ignore-errors
import contextlib, contextvars, dataclasses, datetime, functools, pickle, re, uuid
import attrs, kmock
from kmock import KubernetesError, KubernetesObjectNotFoundError, KubernetesResourceNotFoundError
from kmock._internal import dicts as _kmock_dicts, parsing as _kmock_parsing
from tests.integration import apivalidation as av, crds, kind_rules, schemas
_kmock_parse_path = _kmock_parsing.parse_path
def _parse_path(path):  # the namespaces resource's own paths; everything else as kmock parses it
    parts = path.strip('/').split('/')
    if parts[:3] == ['api', 'v1', 'namespaces'] and len(parts) <= 4:
        return _kmock_parsing.ParsedPath('', 'v1', 'namespaces', None, parts[3] if len(parts) == 4 else None, None)
    return _kmock_parse_path(path)
_kmock_parsing.parse_path = _parse_path
def _clone(obj):  # a deep copy of JSON data (dicts, lists, scalars), about 4x faster than copy.deepcopy
    return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
def _stamp(at): return at.strftime('%Y-%m-%dT%H:%M:%SZ')
def _now(): return _stamp(datetime.datetime.now(datetime.UTC))
def _conflict(msg): return KubernetesError(status=409, reason='Conflict', message=msg)
def _status(code, **kw): return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'code': code, **kw}
def _selected(params, obj):  # equality-based only: k=v, k==v, k!=v; fields as dotted paths
    for sel, is_label in ((params.get('labelSelector', ''), True), (params.get('fieldSelector', ''), False)):
        for term in filter(None, sel.split(',')):
            key, _, val = term.replace('!=', '=').replace('==', '=').partition('=')
            have = ((obj.get('metadata', {}).get('labels') or {}).get(key) if is_label else
                    functools.reduce(lambda o, p: o.get(p) if isinstance(o, dict) else None, key.split('.'), obj))
            if (str('' if have is None else have) == val) == ('!=' in term): return False
    return True
def _rv_of(event):
    rv = ((event.get('object') or {}).get('metadata') or {}).get('resourceVersion') or '0'
    return int(rv) if str(rv).isdigit() else 0

POD_GRACE_DEFAULT_S = 30
"""``spec.terminationGracePeriodSeconds``' default (core/v1 ``DefaultTerminationGracePeriodSeconds``)."""

@dataclasses.dataclass(frozen=True)
class Refusal:
    """One write the emulator refused as a real server's validation would (400 / 422): who, what, the message."""
    method: str
    path: str
    status: int
    message: str
    expected: bool
    def __str__(self): return f"{self.method} {self.path}: {self.status} {self.message}"

REFUSALS: list = []
"""Every :class:`Refusal` of every emulator in this process, in order (``tests/conftest.py`` fails the test that
made an unexpected one, and the session)."""

class _Request:                          # the writes of one request, published once its response is sent
    __slots__ = ('done',)
    def __init__(self): self.done = False
_REQUEST: contextvars.ContextVar = contextvars.ContextVar('apiserver_request', default=None)

@attrs.define(kw_only=True)
class ApiServer(kmock.KubernetesEmulator):
    kube_version = '1.37.0'                 # the release whose strict schemas built-in kinds are checked against
    rv: int = 0
    compacted_rv: int = 0
    log: list = attrs.field(factory=list)   # (rv, resource, event): lets watches resume from an RV
    warnings: list = attrs.field(factory=list)   # fieldValidation=Warn warnings sent (unknown CRD fields pruned)
    refusals: list = attrs.field(factory=list)   # this server's Refusals
    kubelet_after_s: float | None = None    # confirm a graceful pod deletion this long after it (None: the test does)
    _expected: list = attrs.field(factory=list)  # patterns of refusals a test provoked on purpose
    _unpublished: list = attrs.field(factory=list)  # (owner request, resource, event) in resourceVersion order
    _kubelets: set = attrs.field(factory=set)
    _watches: list = attrs.field(factory=list)  # the open watch streams: [resource, stalled]
    def __attrs_post_init__(self):
        super().__attrs_post_init__()       # stock fallbacks call our overridden _serve_* methods
        self.fallback[kmock.method.PUT] << self._serve_put
        self.fallback['post', kmock.subresource('binding')] << self._serve_binding
    async def __call__(self, raw_request):  # the response is sent before the watches see the request's writes
        owner = _Request(); token = _REQUEST.set(owner)
        try:
            response = await super().__call__(raw_request)
            if not response.prepared:
                try: await response.prepare(raw_request); await response.write_eof()
                except ConnectionResetError: pass   # the client left mid-request (a scheduler stopped): no one to tell
            return response
        finally:
            _REQUEST.reset(token); owner.done = True
            async with self._lock: await self._flush()
    async def _handle(self, request):       # skip the stock mutate-before-dispatch step: all writes
        return await kmock.RawHandler._handle(self, request)   # are fallbacks; reactions pre-empt them
    async def __aexit__(self, *exc):
        for task in list(self._kubelets): task.cancel()
        return await super().__aexit__(*exc)
    # -- refusals ---------------------------------------------------------------------------------------------
    def expect_refusals(self, pattern):
        """Refusals whose message matches ``pattern`` (a regex) are the test's intent from now on, not a failure."""
        self._expected.append(re.compile(pattern))
    @contextlib.contextmanager
    def expecting_refusal(self, pattern):
        """Within the block, refusals matching ``pattern`` are expected; at its end, one must have happened."""
        compiled = re.compile(pattern); self._expected.append(compiled); before = len(self.refusals)
        try: yield
        finally: self._expected.remove(compiled)
        assert any(compiled.search(r.message) for r in self.refusals[before:]), f"no refusal matching {pattern!r}"
    def unexpected_refusals(self): return [r for r in self.refusals if not r.expected]
    def _refuse(self, req, status, reason, message, details=None):
        refusal = Refusal(str(req.method.value if hasattr(req.method, 'value') else req.method).upper(), req.url.path, status, message,
                          any(p.search(message) for p in self._expected))
        self.refusals.append(refusal); REFUSALS.append(refusal)
        return KubernetesError(status=status, reason=reason, message=message, details=details)
    # -- storage and the watch --------------------------------------------------------------------------------
    def compact(self):                      # watches resuming from any RV seen so far get ERROR 410
        self.rv += 1; self.compacted_rv, self.log = self.rv, []
    def _obj(self, req):
        key = (req.resource, req.namespace, req.name)
        if key not in self._objects or self._objects[key].deleted: raise KubernetesObjectNotFoundError()
        cur = _clone(self._objects[key].raw); cur.setdefault('metadata', {})
        return key, cur
    async def _commit(self, key, body, type_):   # store; the watch event follows the response (``_flush``)
        self.rv += 1; body['metadata']['resourceVersion'] = str(self.rv)
        if key in self._objects: self._objects[key].create(body)   # appends a history version
        else: self._objects[key] = body
        if type_ == 'DELETED': self._objects[key].delete()
        self._unpublished.append((_REQUEST.get(), key[0], {'type': type_, 'object': _clone(body)}))
        await self._flush()
        return body
    async def _flush(self):                 # with the lock held: publish, in order, what is answered already
        while self._unpublished and (self._unpublished[0][0] is None or self._unpublished[0][0].done):
            _, resource, event = self._unpublished.pop(0)
            await self._publish(resource, event)
    async def _publish(self, resource, event):
        self.log.append((_rv_of(event), resource, event)); await self._buses[resource].put(event)
    # -- validation -------------------------------------------------------------------------------------------
    def _api_version(self, r): return f'{r.group}/{r.version}' if r.group else r.version
    def _validate(self, req, body, old):    # create (old None) or update: raise the real server's 422 / 400
        r, md = req.resource, body.get('metadata') or {}
        if any(k.lower() == UNCHECKED_HEADER.lower() for k in req.headers):
            return
        events = (r.group, r.version, r.plural) == av.EVENTS_V1
        if events and (bad := av.bad_times(body)):
            raise self._refuse(req, 400, 'BadRequest', '; '.join(bad))
        if events: errs = av.validate_event_create(body) if old is None else av.validate_event_update(body, old)
        elif old is None: errs = av.validate_metadata(md, av.name_rule(r.group, r.version, r.plural, self._kind(r)))
        else: errs = []                     # names are immutable
        if (schema := crds.SCHEMAS.get((r.group, r.version, r.plural))) is not None:   # custom resources
            self.warnings += [f"{r.plural}.{r.group} {md.get('name')}: {w}" for w in crds.prune(body, schema)]
            errs += crds.validate(body, schema)
        else:                               # built-in kinds: the release's strict OpenAPI schema
            errs += self._ratcheted(req, body, old, lambda o: schemas.errors(o, self._api_version(r), self._kind(r),
                                                                              self.kube_version))
        errs += self._ratcheted(req, body, old, lambda o: kind_rules.kind_errors(r.group, r.plural, o))
        if old is not None: errs += kind_rules.update_errors(r.group, r.plural, body, old, req.subresource)
        if not events: errs += av.validate_annotations(md)
        errs = list({(e.type, e.field): e for e in reversed(errs)}.values())[::-1]   # the schema's twins dropped
        if errs: self._raise_invalid(req, md.get('name') or '', errs)
    def _ratcheted(self, req, body, old, check):   # an update is refused for what it breaks, not for what was
        errs = check(body)                            # already there (validation ratcheting); a status write
        if old is not None and errs:                  # is judged on its status and metadata only
            before = {str(e) for e in check(old)}
            errs = [e for e in errs if str(e) not in before]
        if req.subresource == 'status':
            errs = [e for e in errs if e.field.startswith(('status', 'metadata'))]
        return errs
    def _raise_invalid(self, req, name, errs):
        r = req.resource
        if all(e.type == 'FieldValueNotSupported' and e.detail == 'unknown field' for e in errs):
            fields = ', '.join(f'unknown field "{e.field}"' for e in errs)   # fieldValidation=Strict
            raise self._refuse(req, 400, 'BadRequest', f'strict decoding error: {fields}')
        status = av.invalid_status(r.group, self._kind(r), name, errs)
        raise self._refuse(req, 422, 'Invalid', status['message'], status['details'])
    # -- writes -----------------------------------------------------------------------------------------------
    async def _serve_create(self, req):
        body = _clone(req.data); md = body.setdefault('metadata', {})
        if req.namespace: md['namespace'] = req.namespace
        if not md.get('name') and md.get('generateName'): md['name'] = av.generate_name(md['generateName'])
        self._validate(req, body, None)
        key = (req.resource, md.get('namespace'), md['name'])
        async with self._lock:
            if key in self._objects and not self._objects[key].deleted: raise _conflict(f"{md['name']} exists")
            md.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
            return kmock.Response(status=201, payload=await self._commit(key, body, 'ADDED'))
    async def _write(self, req, new_of):    # PATCH & PUT: RV and uid preconditions, keep identity fields
        async with self._lock:
            key, cur = self._obj(req); cm = cur['metadata']
            new = new_of(cur); md = new.setdefault('metadata', {})
            if md.get('resourceVersion') not in (None, cm.get('resourceVersion')):
                raise _conflict('the object has been modified; please apply your changes to the latest version')
            if md.get('uid') not in (None, cm.get('uid')):
                raise _conflict(f"Precondition failed: UID in precondition: {md['uid']}, UID in object meta: {cm.get('uid')}")
            md.update({k: cm[k] for k in ('uid', 'name', 'namespace', 'creationTimestamp', 'generation',
                                           'deletionTimestamp', 'deletionGracePeriodSeconds') if k in cm})
            if req.subresource is None and cm.get('generation') and \
                    {k: v for k, v in new.items() if k not in ('metadata', 'status')} != \
                    {k: v for k, v in cur.items() if k not in ('metadata', 'status')}:
                md['generation'] = cm['generation'] + 1   # the spec changed (metadata and status do not count)
            self._validate(req, new, cur)
            gone = md.get('deletionTimestamp') and not md.get('finalizers') and not md.get('deletionGracePeriodSeconds')
            return await self._commit(key, new, 'DELETED' if gone else 'MODIFIED')
    async def _serve_update(self, req):     # PATCH: dict = merge patch (lists replaced), list = JSON patch
        patch = req.data if req.subresource != 'status' or not isinstance(req.data, dict) else \
            {'status': req.data.get('status'), 'metadata': req.data.get('metadata', {})}   # /status: .status only
        def apply(cur): return _clone(_kmock_dicts.patch_dict(cur, patch))   # kmock.Object.patch's merge, on our copy
        return await self._write(req, apply)
    async def _serve_put(self, req):        # replace; PUT .../status replaces only .status
        if req.subresource == 'status':
            def status_of(cur):
                new = _clone(cur); new['status'] = _clone((req.data or {}).get('status'))
                new['metadata']['resourceVersion'] = ((req.data or {}).get('metadata') or {}).get('resourceVersion')
                return new
            return await self._write(req, status_of)
        return await self._write(req, lambda cur: _clone(req.data))
    def _delete_options(self, req):
        opts = dict(req.data) if isinstance(req.data, dict) else {}
        if 'gracePeriodSeconds' not in opts and str(req.params.get('gracePeriodSeconds', '')).lstrip('-').isdigit():
            opts['gracePeriodSeconds'] = int(req.params['gracePeriodSeconds'])
        return opts
    def _grace_s(self, req, obj, opts):  # pod strategy CheckGracefulDelete (pkg/registry/core/pod/strategy.go)
        if (req.resource.group, req.resource.plural) != ('', 'pods'): return 0
        spec, phase = obj.get('spec') or {}, (obj.get('status') or {}).get('phase')
        grace = opts.get('gracePeriodSeconds')
        if grace is None: grace = spec.get('terminationGracePeriodSeconds', POD_GRACE_DEFAULT_S)
        if not spec.get('nodeName') or phase in ('Succeeded', 'Failed'): grace = 0   # never started / done: at once
        return 1 if grace < 0 else grace
    async def _serve_delete(self, req):     # registry/rest BeforeDelete: graceful for bound pods, else at once
        async with self._lock:
            key, cur = self._obj(req); md = cur['metadata']; opts = self._delete_options(req)
            pre = opts.get('preconditions') or {}
            if pre.get('uid') and pre['uid'] != md.get('uid'):  # DeleteOptions.preconditions, as the server checks
                raise _conflict(f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {md.get('uid')}")
            if pre.get('resourceVersion') and pre['resourceVersion'] != md.get('resourceVersion'):
                raise _conflict(f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                                f"ResourceVersion in object meta: {md.get('resourceVersion')}")
            grace = self._grace_s(req, cur, opts)
            if md.get('deletionTimestamp'):    # already terminating: a grace period may only get shorter
                left = md.get('deletionGracePeriodSeconds') or 0
                if grace >= left: return cur
                md['deletionGracePeriodSeconds'] = grace
            elif grace:
                md['deletionTimestamp'] = _stamp(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=grace))
                md['deletionGracePeriodSeconds'] = grace
                out = await self._commit(key, cur, 'MODIFIED')
                if self.kubelet_after_s is not None: self._kubelet(key, min(grace, self.kubelet_after_s))
                return out
            if not md.get('finalizers'): return await self._commit(key, cur, 'DELETED')
            md.setdefault('deletionTimestamp', _now()); md['deletionGracePeriodSeconds'] = 0
            return await self._commit(key, cur, 'MODIFIED')   # soft delete; gone once the finalizers are patched away
    def terminating(self, namespace=None):
        """The pods being deleted gracefully whose kubelet has not confirmed yet: (namespace, name)."""
        return sorted((k[1], k[2]) for k, o in self._objects.items()
                      if k[0] == 'v1/pods' and not o.deleted and namespace in (None, k[1])
                      and (o.raw.get('metadata') or {}).get('deletionGracePeriodSeconds'))
    async def kubelet_confirm(self, namespace=None, name=None):
        """What each terminating pod's kubelet does once its containers stopped: the final delete (grace 0); the
        pod goes (DELETED), or waits for its finalizers. Returns how many were confirmed."""
        confirmed = 0
        async with self._lock:
            for (ns, n) in self.terminating(namespace):
                if name not in (None, n): continue
                key = (kmock.resource('v1/pods'), ns, n); cur = _clone(self._objects[key].raw)
                cur['metadata']['deletionGracePeriodSeconds'] = 0
                await self._commit(key, cur, 'MODIFIED' if cur['metadata'].get('finalizers') else 'DELETED')
                confirmed += 1
        return confirmed
    def _kubelet(self, key, after_s):
        import asyncio
        async def confirm():
            await asyncio.sleep(after_s); await self.kubelet_confirm(key[1], key[2])
        # A context of its own: the kubelet is not the client whose request scheduled it (a test server that
        # tells its clients' writes apart by a context variable must not take the kubelet's for theirs).
        task = asyncio.get_running_loop().create_task(confirm(), name=f'kubelet/{key[1]}/{key[2]}',
                                                      context=contextvars.Context())
        self._kubelets.add(task); task.add_done_callback(self._kubelets.discard)
    async def _serve_binding(self, req):    # POST /api/v1/namespaces/{ns}/pods/{name}/binding
        async with self._lock:
            key, pod = self._obj(req); spec = pod.setdefault('spec', {})
            if spec.get('nodeName'): raise _conflict(f"pod {req.name} is already assigned to node {spec['nodeName']}")
            if spec.get('schedulingGates'): raise _conflict(f"pod {req.name} has non-empty .spec.schedulingGates")
            if pod['metadata'].get('deletionTimestamp'): raise _conflict(f"pod {req.name} is being deleted, cannot be assigned to a host")
            uid = ((req.data or {}).get('metadata') or {}).get('uid')   # BindingREST: a UID precondition
            if uid and uid != pod['metadata'].get('uid'):
                raise _conflict(f"Precondition failed: UID in precondition: {uid}, UID in object meta: {pod['metadata'].get('uid')}")
            spec['nodeName'] = req.data['target']['name']
            if annotations := (req.data.get('metadata') or {}).get('annotations'):   # BindingREST merges them
                pod['metadata'].setdefault('annotations', {}).update(annotations)
            conds = [c for c in pod.setdefault('status', {}).get('conditions', []) if c.get('type') != 'PodScheduled']
            pod['status']['conditions'] = conds + [{'type': 'PodScheduled', 'status': 'True', 'lastTransitionTime': _now()}]
            pod['status'].pop('nominatedNodeName', None)
            await self._commit(key, pod, 'MODIFIED')
        return kmock.Response(status=201, payload=_status(201, status='Success'))
    async def _serve_version(self, req):    # /api/v1's groupVersion is "v1" (kmock 0.8 says "/v1"; client-go's
        out = await super()._serve_version(req)   # RESTMapper keys resource lists by it: Helm maps no core kind)
        out['groupVersion'] = out['groupVersion'].lstrip('/'); return out
    def _kind(self, res):
        return self._resources[res].kind if res in self._resources else res.plural
    def _live(self, res): return [o for (r, _, _), o in self._objects.items() if r == res and not o.deleted]
    def _matches(self, req, body):
        return req.namespace in (None, body.get('metadata', {}).get('namespace')) and _selected(req.params, body)
    async def _serve_list(self, req):
        if req.resource not in self._get_resources(): raise KubernetesResourceNotFoundError()
        async with self._lock:
            items = [_clone(o.raw) for o in self._live(req.resource) if self._matches(req, o.raw)]
            return {'kind': f'{self._resources[req.resource].kind}List', 'items': items,
                    'apiVersion': f'{req.resource.group}/{req.resource.version}'.lstrip('/'),
                    'metadata': {'resourceVersion': str(self.rv)}}
    async def _serve_watch(self, req):
        yield b''                            # flush the headers
        since, bus = req.params.get('resourceVersion', '0'), self._buses[req.resource]
        since = int(since) if since.isdigit() else 0
        async with self._lock:               # backlog + bus mark taken atomically: no gaps, no dups
            mark = await bus.mark()
            if 0 < since < self.compacted_rv:
                backlog = [{'type': 'ERROR', 'object': _status(410, status='Failure', reason='Expired',
                                                               message=f'too old resource version: {since}')}]
            elif since:
                backlog = [e for rv, r, e in self.log if r == req.resource and rv > since]
            else:                            # no RV or "0": the current state as ADDED
                backlog = [{'type': 'ADDED', 'object': _clone(o.raw)} for o in self._live(req.resource)]
                since = self.rv              # writes already answered but not yet published are in that state
        stream = [req.resource, False]; self._watches.append(stream)
        try:
            for event in backlog:
                if event['type'] == 'ERROR': yield event; return
                if self._matches(req, event['object']) and not stream[1]: yield event
            async for event in bus.stream(since=mark):
                if _rv_of(event) > since and self._matches(req, event['object']) and not stream[1]: yield event
        finally:
            self._watches.remove(stream)
            await bus.unmark(mark)
    def stall_watches(self, resource):
        """Every watch of ``resource`` (``group/version/plural``) open now stays open and sends nothing more, no
        event and no error, as a wedged stream or a dead connection that no one closed; a watch opened later is
        served as usual. Returns how many were stalled."""
        stalled = [s for s in self._watches if s[0] == kmock.resource(resource) and not s[1]]
        for stream in stalled: stream[1] = True
        return len(stalled)

UNCHECKED_HEADER = 'X-Emulator-Unchecked'
"""A request carrying this header is stored without validation: it stands for an object that
reached the store past the validation a write of ours gets (the chaos suite's malformed objects)."""
