// Node-API binding: loads proving and verification keys into external handles; proves and verifies on
// libuv worker threads.
#include <node_api.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "msm.hpp"
#include "pool.hpp"
#include "prover.hpp"
#include "verify.hpp"

namespace {

struct KeyHolder {
  std::shared_ptr<const np::ProvingKey> pk;
};

struct VkeyHolder {
  std::shared_ptr<const np::VerifyingKey> vk;
};

// Tags on the handles, so one kind of handle passed where the other is expected is refused, not misread.
constexpr napi_type_tag kProvingKeyTag = {0x6e70726f76696e67ULL, 0x6b65792d68616e64ULL};
constexpr napi_type_tag kVerifyingKeyTag = {0x6e70766572696679ULL, 0x6b65792d68616e64ULL};

// One promise-returning call: execute() runs on a libuv worker thread (what it throws becomes the
// rejection's code and message), dropInputs() right after it there (a key released meanwhile is freed
// off the event loop), then result() on the main thread fulfils the promise with its value (null
// rejects). queueJob() owns the job from the start.
struct AsyncBase {
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  std::string errCode;
  std::string errMessage;
  virtual ~AsyncBase() = default;
  virtual void execute() = 0;
  virtual void dropInputs() {}
  virtual napi_value result(napi_env env) = 0;
};

enum class Precompute { Eager, Background, Off };

struct LoadJob : AsyncBase {
  std::string path;
  std::vector<uint8_t> bytes;
  bool fromBuffer = false;
  unsigned threads = 1;
  Precompute precompute = Precompute::Background;
  std::shared_ptr<const np::ProvingKey> key;

  void execute() override {
    const bool eager = precompute == Precompute::Eager;
    key = fromBuffer ? np::loadZkeyBuffer(bytes.data(), bytes.size(), threads, eager)
                     : np::loadZkeyFile(path, threads, eager);
  }
  void dropInputs() override { std::vector<uint8_t>().swap(bytes); }
  napi_value result(napi_env env) override;
};

// Builds a loaded key's shifted tables off the event loop; proofs meanwhile use the plain ones.
struct TablesJob {
  napi_async_work work = nullptr;
  std::shared_ptr<const np::ProvingKey> pk;
  unsigned threads = 1;
};

void startTables(napi_env env, std::shared_ptr<const np::ProvingKey> pk, unsigned threads) {
  auto* job = new TablesJob{nullptr, std::move(pk), threads};
  napi_value name;
  napi_create_string_utf8(env, "nativeProverTables", NAPI_AUTO_LENGTH, &name);
  napi_status st = napi_create_async_work(
      env, nullptr, name,
      [](napi_env, void* data) {
        auto* j = static_cast<TablesJob*>(data);
        // A key released meanwhile needs no tables; a failure (memory) leaves the plain ones in place.
        if (j->pk.use_count() > 1) {
          try {
            np::precomputeTables(*j->pk, j->threads);
          } catch (...) {
          }
        }
        j->pk.reset();
      },
      [](napi_env env, napi_status, void* data) {
        auto* j = static_cast<TablesJob*>(data);
        napi_delete_async_work(env, j->work);
        delete j;
      },
      job, &job->work);
  if (st != napi_ok || napi_queue_async_work(env, job->work) != napi_ok) {
    if (job->work) napi_delete_async_work(env, job->work);
    delete job;
  }
}

struct ProveJob : AsyncBase {
  std::shared_ptr<const np::ProvingKey> pk;
  std::vector<uint8_t> witness;
  unsigned threads = 1;
  np::ProofOutput proof;

  void execute() override {
    std::vector<np::U256> w = np::parseWitness(*pk, witness.data(), witness.size());
    std::vector<uint8_t>().swap(witness);
    proof = np::prove(*pk, w, threads);
  }
  void dropInputs() override { pk.reset(); }
  napi_value result(napi_env env) override {
    napi_value obj, json, pub;
    napi_create_object(env, &obj);
    napi_create_string_utf8(env, proof.proofJson.c_str(), proof.proofJson.size(), &json);
    napi_create_string_utf8(env, proof.publicJson.c_str(), proof.publicJson.size(), &pub);
    napi_set_named_property(env, obj, "proof", json);
    napi_set_named_property(env, obj, "publicSignals", pub);
    return obj;
  }
};

#define CHECK(call)                                   \
  do {                                                \
    if ((call) != napi_ok) return nullptr;            \
  } while (0)

napi_value throwType(napi_env env, const char* msg) {
  napi_throw_type_error(env, "ERR_INVALID_ARG", msg);
  return nullptr;
}

template <class Fn>
void capture(AsyncBase* job, Fn&& fn) {
  try {
    fn();
  } catch (const np::ProverError& e) {
    job->errCode = e.code();
    job->errMessage = e.what();
  } catch (const std::bad_alloc&) {
    job->errCode = "OUT_OF_MEMORY";
    job->errMessage = "out of memory";
  } catch (const std::exception& e) {
    job->errCode = "PROVER_FAILED";
    job->errMessage = e.what();
  } catch (...) {
    job->errCode = "PROVER_FAILED";
    job->errMessage = "unknown failure";
  }
}

void rejectWith(napi_env env, AsyncBase* job) {
  napi_value code, msg, err;
  napi_create_string_utf8(env, job->errCode.c_str(), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, job->errMessage.c_str(), NAPI_AUTO_LENGTH, &msg);
  napi_create_error(env, code, msg, &err);
  napi_reject_deferred(env, job->deferred, err);
}

// Queues `job` as async work named `name` and returns its promise.
napi_value queueJob(napi_env env, AsyncBase* job, const char* name) {
  napi_value promise, resource;
  if (napi_create_promise(env, &job->deferred, &promise) != napi_ok) {
    delete job;
    return nullptr;
  }
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource);
  napi_status st = napi_create_async_work(
      env, nullptr, resource,
      [](napi_env, void* data) {
        auto* j = static_cast<AsyncBase*>(data);
        capture(j, [&] { j->execute(); });
        j->dropInputs();
      },
      [](napi_env env, napi_status, void* data) {
        auto* j = static_cast<AsyncBase*>(data);
        napi_value value = j->errCode.empty() ? j->result(env) : nullptr;
        if (value) {
          napi_resolve_deferred(env, j->deferred, value);
        } else {
          if (j->errCode.empty()) {
            j->errCode = "PROVER_FAILED";
            j->errMessage = "cannot create the result";
          }
          rejectWith(env, j);
        }
        napi_delete_async_work(env, j->work);
        delete j;
      },
      job, &job->work);
  if (st != napi_ok || napi_queue_async_work(env, job->work) != napi_ok) {
    if (job->work) napi_delete_async_work(env, job->work);
    job->errCode = "PROVER_FAILED";
    job->errMessage = "cannot queue the work";
    rejectWith(env, job);
    delete job;
  }
  return promise;
}

bool readThreads(napi_env env, napi_value v, unsigned* out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok) return false;
  if (t == napi_undefined || t == napi_null) {
    *out = np::ThreadPool::defaultThreads();
    return true;
  }
  if (t != napi_number) return false;
  double d;
  napi_get_value_double(env, v, &d);
  if (!(d >= 0 && d <= 1024) || d != (double)(unsigned)d) return false;
  *out = d == 0 ? np::ThreadPool::defaultThreads() : (unsigned)d;
  return true;
}

bool readBytes(napi_env env, napi_value v, std::vector<uint8_t>* out) {
  bool isBuf = false, isTyped = false;
  void* data = nullptr;
  size_t len = 0;
  napi_is_buffer(env, v, &isBuf);
  if (isBuf) {
    if (napi_get_buffer_info(env, v, &data, &len) != napi_ok) return false;
  } else {
    napi_is_typedarray(env, v, &isTyped);
    if (!isTyped) return false;
    napi_typedarray_type type;
    size_t elems, offset;
    napi_value ab;
    if (napi_get_typedarray_info(env, v, &type, &elems, &data, &ab, &offset) != napi_ok) return false;
    if (type != napi_uint8_array) return false;
    len = elems;
  }
  out->assign(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + len);
  return true;
}

bool readStringArg(napi_env env, napi_value v, std::string* out) {
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_string) return false;
  size_t len = 0;
  napi_get_value_string_utf8(env, v, nullptr, 0, &len);
  out->resize(len + 1);
  napi_get_value_string_utf8(env, v, &(*out)[0], len + 1, &len);
  out->resize(len);
  return true;
}

void* getTagged(napi_env env, napi_value v, const napi_type_tag& tag) {
  napi_valuetype t;
  if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_external) return nullptr;
  bool tagged = false;
  if (napi_check_object_type_tag(env, v, &tag, &tagged) != napi_ok || !tagged) return nullptr;
  void* data = nullptr;
  if (napi_get_value_external(env, v, &data) != napi_ok) return nullptr;
  return data;
}

// An external owning `holder` (deleted at garbage collection), tagged; null on failure.
template <class Holder>
napi_value makeHandle(napi_env env, Holder* holder, const napi_type_tag& tag) {
  napi_value ext;
  auto finalize = [](napi_env, void* data, void*) { delete static_cast<Holder*>(data); };
  if (napi_create_external(env, holder, finalize, nullptr, &ext) != napi_ok) {
    delete holder;
    return nullptr;
  }
  // Once created, the finalizer owns the holder.
  if (napi_type_tag_object(env, ext, &tag) != napi_ok) return nullptr;
  return ext;
}

KeyHolder* getHolder(napi_env env, napi_value v) {
  return static_cast<KeyHolder*>(getTagged(env, v, kProvingKeyTag));
}

// load(pathOrBytes, threads?, precompute? 'eager' | 'background' | 'off') -> Promise<handle>
napi_value Load(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3] = {nullptr, nullptr, nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc < 1) return throwType(env, "load(zkey, threads?) needs a path or a buffer");
  auto* job = new LoadJob();
  napi_valuetype t;
  napi_typeof(env, argv[0], &t);
  if (t == napi_string) {
    size_t len = 0;
    napi_get_value_string_utf8(env, argv[0], nullptr, 0, &len);
    job->path.resize(len + 1);
    napi_get_value_string_utf8(env, argv[0], &job->path[0], len + 1, &len);
    job->path.resize(len);
  } else if (readBytes(env, argv[0], &job->bytes)) {
    job->fromBuffer = true;
  } else {
    delete job;
    return throwType(env, "zkey must be a path string or a Uint8Array");
  }
  if (!readThreads(env, argc > 1 ? argv[1] : nullptr, &job->threads)) {
    if (argc > 1) {
      delete job;
      return throwType(env, "threads must be an integer between 0 and 1024");
    }
    job->threads = np::ThreadPool::defaultThreads();
  }
  if (argc > 2) {
    napi_valuetype pt;
    napi_typeof(env, argv[2], &pt);
    std::string mode;
    if (pt != napi_undefined) {
      if (!readStringArg(env, argv[2], &mode) || (mode != "eager" && mode != "background" && mode != "off")) {
        delete job;
        return throwType(env, "precompute must be 'eager', 'background' or 'off'");
      }
      job->precompute = mode == "eager" ? Precompute::Eager
                        : mode == "off" ? Precompute::Off
                                        : Precompute::Background;
    }
  }
  return queueJob(env, job, "nativeProverLoad");
}

napi_value LoadJob::result(napi_env env) {
  napi_value handle = makeHandle(env, new KeyHolder{key}, kProvingKeyTag);
  if (handle && precompute == Precompute::Background) startTables(env, key, threads);
  return handle;
}

// prove(handle, witnessBytes, threads?) -> Promise<{ proof: string, publicSignals: string }>
napi_value Prove(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  if (argc < 2) return throwType(env, "prove(handle, witness, threads?) needs two arguments");
  KeyHolder* holder = getHolder(env, argv[0]);
  if (!holder) return throwType(env, "first argument is not a proving key handle");
  if (!holder->pk) return throwType(env, "proving key handle was released");
  auto* job = new ProveJob();
  job->pk = holder->pk;  // shared ownership keeps the key alive even if the handle is released mid-proof
  if (!readBytes(env, argv[1], &job->witness)) {
    delete job;
    return throwType(env, "witness must be a Uint8Array");
  }
  job->threads = np::ThreadPool::defaultThreads();
  if (argc > 2 && !readThreads(env, argv[2], &job->threads)) {
    delete job;
    return throwType(env, "threads must be an integer between 0 and 1024");
  }
  return queueJob(env, job, "nativeProverProve");
}

// info(handle) -> { nVars, nPublic, domainSize }
napi_value Info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  KeyHolder* holder = argc ? getHolder(env, argv[0]) : nullptr;
  if (!holder || !holder->pk) return throwType(env, "argument is not a live proving key handle");
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_uint32(env, holder->pk->nVars, &v);
  napi_set_named_property(env, obj, "nVars", v);
  napi_create_uint32(env, holder->pk->nPublic, &v);
  napi_set_named_property(env, obj, "nPublic", v);
  napi_create_uint32(env, holder->pk->domainSize, &v);
  napi_set_named_property(env, obj, "domainSize", v);
  std::shared_ptr<const np::MsmSet> tables = holder->pk->tables();
  napi_get_boolean(env, tables->shifted, &v);
  napi_set_named_property(env, obj, "precomputed", v);
  napi_create_double(env, (double)tables->bytes(), &v);
  napi_set_named_property(env, obj, "tableBytes", v);
  return obj;
}

// release(handle): drops the key now instead of waiting for garbage collection.
napi_value Release(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  KeyHolder* holder = argc ? getHolder(env, argv[0]) : nullptr;
  if (!holder) return throwType(env, "argument is not a proving key handle");
  holder->pk.reset();
  return nullptr;
}

napi_value DefaultThreads(napi_env env, napi_callback_info) {
  napi_value v;
  napi_create_uint32(env, np::ThreadPool::defaultThreads(), &v);
  return v;
}

// ---- Groth16 verification

struct PrepareVkeyJob : AsyncBase {
  std::string numbers;
  std::shared_ptr<const np::VerifyingKey> key;

  void execute() override { key = np::prepareVerifyingKey(numbers); }
  napi_value result(napi_env env) override {
    return makeHandle(env, new VkeyHolder{key}, kVerifyingKeyTag);
  }
};

struct VerifyJob : AsyncBase {
  std::shared_ptr<const np::VerifyingKey> vk;
  std::string signals, proof, reason;

  void execute() override { reason = np::verifyProof(*vk, signals, proof); }
  void dropInputs() override { vk.reset(); }
  napi_value result(napi_env env) override {
    napi_value v;
    return napi_create_string_utf8(env, reason.c_str(), reason.size(), &v) == napi_ok ? v : nullptr;
  }
};

// prepareVerifyingKey(numbers) -> Promise<handle>: checks the key's points and builds its line and
// fixed-base tables off the event loop.
napi_value PrepareVkey(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  auto* job = new PrepareVkeyJob();
  if (!readStringArg(env, argv[0], &job->numbers)) {
    delete job;
    return throwType(env, "prepareVerifyingKey(numbers) needs the key's coordinates as a string");
  }
  return queueJob(env, job, "nativeVerifierPrepare");
}

// verify(handle, publicSignals, proof) -> Promise<string>: "" when the proof holds, else the reason.
napi_value Verify(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3] = {nullptr, nullptr, nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  auto* holder = static_cast<VkeyHolder*>(getTagged(env, argv[0], kVerifyingKeyTag));
  if (!holder || !holder->vk) return throwType(env, "first argument is not a verification key handle");
  auto* job = new VerifyJob();
  job->vk = holder->vk;
  if (!readStringArg(env, argv[1], &job->signals) || !readStringArg(env, argv[2], &job->proof)) {
    delete job;
    return throwType(env, "public signals and proof must be strings of decimal coordinates");
  }
  return queueJob(env, job, "nativeVerifierVerify");
}

// ---- Test-only surface: the arithmetic under the prover, exposed so it can be checked against
// independent references. Inputs are validated; nothing here is used by the prover itself.

napi_value throwRange(napi_env env, const char* msg) {
  napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
  return nullptr;
}

napi_value bufferFrom(napi_env env, const void* data, size_t len) {
  napi_value buf;
  void* copy = nullptr;
  if (napi_create_buffer_copy(env, len, data, &copy, &buf) != napi_ok) return nullptr;
  return buf;
}

// Reads an optional non-negative integer property of an options object; false when present but invalid.
bool optionalUint(napi_env env, napi_value obj, const char* name, unsigned max, unsigned* out) {
  napi_valuetype t;
  if (!obj || napi_typeof(env, obj, &t) != napi_ok || t == napi_undefined || t == napi_null) return true;
  if (t != napi_object) return false;
  bool has = false;
  napi_has_named_property(env, obj, name, &has);
  if (!has) return true;
  napi_value v;
  napi_get_named_property(env, obj, name, &v);
  if (napi_typeof(env, v, &t) != napi_ok) return false;
  if (t == napi_undefined) return true;
  if (t != napi_number) return false;
  double d;
  napi_get_value_double(env, v, &d);
  if (!(d >= 0 && d <= max) || d != (double)(unsigned)d) return false;
  *out = (unsigned)d;
  return true;
}

template <class F>
bool fieldOp(const std::string& op, const std::string& impl, const F& a, const F& b, F* r) {
  if (op == "add") {
    *r = F::add(a, b);
  } else if (op == "sub") {
    *r = F::sub(a, b);
  } else if (op == "neg") {
    *r = F::neg(a);
  } else if (op == "mul" || op == "square") {
    const F& y = op == "mul" ? b : a;
    if (impl == "portable") {
      *r = F::mulPortable(a, y);
#ifdef NP_HAVE_ADX_PATH
    } else if (impl == "adx") {
      *r = F::mulAdx(a, y);
#endif
    } else {
      *r = op == "mul" ? F::mul(a, b) : F::sqr(a);
    }
  } else if (op == "inverse") {
    if (a.isZero()) return false;
    *r = F::inv(a);
  } else if (op == "toMontgomery") {
    *r = F::fromStd(a.v);
  } else if (op == "fromMontgomery") {
    np::U256 x = a.toStd();
    std::memcpy(r->v, x.v, 32);
  } else {
    return false;
  }
  return true;
}

// _fieldOp(field 'fq' | 'fr', op, a, b?, impl? 'auto' | 'portable' | 'adx') -> 32-byte Buffer.
// a and b are 32-byte little-endian values below the modulus, taken as the stored (Montgomery) form.
napi_value FieldOpFn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string field, op, impl = "auto";
  if (!readStringArg(env, argv[0], &field) || (field != "fq" && field != "fr")) {
    return throwType(env, "field must be 'fq' or 'fr'");
  }
  if (!readStringArg(env, argv[1], &op)) return throwType(env, "op must be a string");
  if (argc > 4 && argv[4]) {
    napi_valuetype t;
    napi_typeof(env, argv[4], &t);
    if (t != napi_undefined && !readStringArg(env, argv[4], &impl)) {
      return throwType(env, "impl must be a string");
    }
  }
  if (impl != "auto" && impl != "portable" && impl != "adx") return throwType(env, "unknown impl");
  if (impl == "adx" && !np::usesAdx()) return throwRange(env, "this CPU has no BMI2/ADX");
  std::vector<uint8_t> ab, bb(32, 0);
  if (!readBytes(env, argv[2], &ab) || ab.size() != 32) return throwType(env, "a must be 32 bytes");
  if (argc > 3 && argv[3]) {
    napi_valuetype t;
    napi_typeof(env, argv[3], &t);
    if (t != napi_undefined && t != napi_null && (!readBytes(env, argv[3], &bb) || bb.size() != 32)) {
      return throwType(env, "b must be 32 bytes");
    }
  }
  auto run = [&](auto tag) -> napi_value {
    using F = np::Field<decltype(tag)>;
    F a, b, r;
    std::memcpy(a.v, ab.data(), 32);
    std::memcpy(b.v, bb.data(), 32);
    if (!F::isCanonical(a.v) || !F::isCanonical(b.v)) {
      return throwRange(env, "operand is not below the modulus");
    }
    if (!fieldOp(op, impl, a, b, &r)) return throwRange(env, "unknown op, or the inverse of zero");
    return bufferFrom(env, r.v, 32);
  };
  return field == "fq" ? run(np::FqTag{}) : run(np::FrTag{});
}

template <class F>
napi_value msmFn(napi_env env, napi_callback_info info) {
  using P = np::Affine<F>;
  size_t argc = 3;
  napi_value argv[3] = {nullptr, nullptr, nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::vector<uint8_t> pb, sb;
  if (!readBytes(env, argv[0], &pb) || pb.size() % sizeof(P) != 0) {
    return throwType(env, "points must be affine points in the zkey layout");
  }
  if (!readBytes(env, argv[1], &sb) || sb.size() != pb.size() / sizeof(P) * 32) {
    return throwType(env, "scalars must be one 32-byte little-endian value per point");
  }
  const size_t n = pb.size() / sizeof(P);
  unsigned c = 0, copies = 0, threads = 1;
  if (!optionalUint(env, argv[2], "c", np::kMaxWindowBits, &c) || (c != 0 && c < 2) ||
      !optionalUint(env, argv[2], "copies", 256, &copies) ||
      !optionalUint(env, argv[2], "threads", 64, &threads)) {
    return throwRange(env, "options: c in 2..15, copies in 1..256, threads in 1..64");
  }
  std::vector<P> points(n);
  std::memcpy(points.data(), pb.data(), pb.size());
  for (const P& p : points) {
    const np::u64* words = reinterpret_cast<const np::u64*>(&p);
    for (size_t k = 0; k < sizeof(P) / 32; ++k) {
      if (!np::Fq::isCanonical(words + 4 * k)) {
        return throwRange(env, "a coordinate is not below the modulus");
      }
    }
    if (!np::onCurve(p)) return throwRange(env, "a point is not on the curve");
  }
  std::vector<np::U256> scalars(n);
  std::memcpy(scalars.data(), sb.data(), sb.size());
  for (const auto& s : scalars) {
    if (!np::Fr::isCanonical(s.v)) return throwRange(env, "a scalar is not below the group order");
  }
  threads = std::max(1u, threads);
  np::TableShape shape = np::planTable(std::max<size_t>(1, n), sizeof(P), 16u << 20, threads);
  if (c) shape = np::TableShape{c, np::windowsFor(c), 1};
  if (copies) {
    unsigned nW = np::windowsFor(shape.c);
    copies = std::min(copies, nW);
    shape.stride = (nW + copies - 1) / copies;
    shape.copies = (nW + shape.stride - 1) / shape.stride;
  }
  try {
    np::MsmTable<F> table = np::buildTable(std::move(points), shape, threads);
    P r = np::msm(table, scalars.data(), n, threads).toAffine();
    return bufferFrom(env, &r, sizeof(P));
  } catch (const std::exception& e) {
    napi_throw_error(env, "PROVER_FAILED", e.what());
    return nullptr;
  }
}

// _pairingCheck(g1, g2) -> whether the product of e(g1[i], g2[i]) is one. Points in the zkey layout
// ((0, 0) is infinity, and such a pair contributes one); G2 points must be in the subgroup.
napi_value PairingCheckFn(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2] = {nullptr, nullptr};
  CHECK(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::vector<uint8_t> ab, bb;
  if (!readBytes(env, argv[0], &ab) || ab.size() % sizeof(np::G1Affine) != 0 || !readBytes(env, argv[1], &bb) ||
      bb.size() % sizeof(np::G2Affine) != 0 || ab.size() / sizeof(np::G1Affine) != bb.size() / sizeof(np::G2Affine)) {
    return throwType(env, "g1 and g2 must hold the same number of points in the zkey layout");
  }
  std::vector<np::G1Affine> g1(ab.size() / sizeof(np::G1Affine));
  std::vector<np::G2Affine> g2(g1.size());
  std::memcpy(g1.data(), ab.data(), ab.size());
  std::memcpy(g2.data(), bb.data(), bb.size());
  auto canonical = [](const void* p, size_t words) {
    const np::u64* w = static_cast<const np::u64*>(p);
    for (size_t k = 0; k < words; k += 4) {
      if (!np::Fq::isCanonical(w + k)) return false;
    }
    return true;
  };
  for (size_t i = 0; i < g1.size(); ++i) {
    if (!canonical(&g1[i], 8) || !canonical(&g2[i], 16)) return throwRange(env, "a coordinate is not below the modulus");
    if (!np::onCurve(g1[i]) || !np::onCurve(g2[i])) return throwRange(env, "a point is not on the curve");
    if (!np::inG2Subgroup(g2[i])) return throwRange(env, "a G2 point is not in the subgroup");
  }
  napi_value v;
  napi_get_boolean(env, np::pairingProductCheck(g1, g2), &v);
  return v;
}

// _cpu() -> { adx }: whether field multiplication takes the MULX/ADCX/ADOX path here.
napi_value CpuFn(napi_env env, napi_callback_info) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_get_boolean(env, np::usesAdx(), &v);
  napi_set_named_property(env, obj, "adx", v);
  return obj;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"load", nullptr, Load, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"prove", nullptr, Prove, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"release", nullptr, Release, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"defaultThreads", nullptr, DefaultThreads, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"_fieldOp", nullptr, FieldOpFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"_msmG1", nullptr, msmFn<np::Fq>, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"_msmG2", nullptr, msmFn<np::Fq2>, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"_cpu", nullptr, CpuFn, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"prepareVerifyingKey", nullptr, PrepareVkey, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"verify", nullptr, Verify, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"_pairingCheck", nullptr, PairingCheckFn, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  CHECK(napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props));
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
