// Node-API binding: loads proving keys into external handles and proves on libuv worker threads.
#include <node_api.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "pool.hpp"
#include "prover.hpp"

namespace {

struct KeyHolder {
  std::shared_ptr<const np::ProvingKey> pk;
};

struct AsyncBase {
  napi_async_work work = nullptr;
  napi_deferred deferred = nullptr;
  std::string errCode;
  std::string errMessage;
  virtual ~AsyncBase() = default;
};

struct LoadJob : AsyncBase {
  std::string path;
  std::vector<uint8_t> bytes;
  bool fromBuffer = false;
  unsigned threads = 1;
  std::shared_ptr<const np::ProvingKey> result;
};

struct ProveJob : AsyncBase {
  std::shared_ptr<const np::ProvingKey> pk;
  std::vector<uint8_t> witness;
  unsigned threads = 1;
  np::ProofOutput result;
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

void finalizeHolder(napi_env, void* data, void*) { delete static_cast<KeyHolder*>(data); }

KeyHolder* getHolder(napi_env env, napi_value v) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external) return nullptr;
  void* data = nullptr;
  if (napi_get_value_external(env, v, &data) != napi_ok) return nullptr;
  return static_cast<KeyHolder*>(data);
}

// load(pathOrBytes, threads?) -> Promise<handle>
napi_value Load(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
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
  napi_value promise, name;
  CHECK(napi_create_promise(env, &job->deferred, &promise));
  napi_create_string_utf8(env, "nativeProverLoad", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(
      env, nullptr, name,
      [](napi_env, void* data) {
        auto* j = static_cast<LoadJob*>(data);
        capture(j, [&] {
          j->result = j->fromBuffer ? np::loadZkeyBuffer(j->bytes.data(), j->bytes.size(), j->threads)
                                    : np::loadZkeyFile(j->path, j->threads);
          std::vector<uint8_t>().swap(j->bytes);
        });
      },
      [](napi_env env, napi_status, void* data) {
        auto* j = static_cast<LoadJob*>(data);
        if (j->errCode.empty()) {
          auto* holder = new KeyHolder{j->result};
          napi_value ext;
          if (napi_create_external(env, holder, finalizeHolder, nullptr, &ext) != napi_ok) {
            delete holder;
            j->errCode = "PROVER_FAILED";
            j->errMessage = "cannot create handle";
            rejectWith(env, j);
          } else {
            napi_resolve_deferred(env, j->deferred, ext);
          }
        } else {
          rejectWith(env, j);
        }
        napi_delete_async_work(env, j->work);
        delete j;
      },
      job, &job->work);
  CHECK(napi_queue_async_work(env, job->work));
  return promise;
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
  napi_value promise, name;
  CHECK(napi_create_promise(env, &job->deferred, &promise));
  napi_create_string_utf8(env, "nativeProverProve", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(
      env, nullptr, name,
      [](napi_env, void* data) {
        auto* j = static_cast<ProveJob*>(data);
        capture(j, [&] {
          std::vector<np::U256> w = np::parseWitness(*j->pk, j->witness.data(), j->witness.size());
          std::vector<uint8_t>().swap(j->witness);
          j->result = np::prove(*j->pk, w, j->threads);
        });
        j->pk.reset();
      },
      [](napi_env env, napi_status, void* data) {
        auto* j = static_cast<ProveJob*>(data);
        if (j->errCode.empty()) {
          napi_value obj, proof, pub;
          napi_create_object(env, &obj);
          napi_create_string_utf8(env, j->result.proofJson.c_str(), j->result.proofJson.size(), &proof);
          napi_create_string_utf8(env, j->result.publicJson.c_str(), j->result.publicJson.size(), &pub);
          napi_set_named_property(env, obj, "proof", proof);
          napi_set_named_property(env, obj, "publicSignals", pub);
          napi_resolve_deferred(env, j->deferred, obj);
        } else {
          rejectWith(env, j);
        }
        napi_delete_async_work(env, j->work);
        delete j;
      },
      job, &job->work);
  CHECK(napi_queue_async_work(env, job->work));
  return promise;
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

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"load", nullptr, Load, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"prove", nullptr, Prove, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"release", nullptr, Release, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"defaultThreads", nullptr, DefaultThreads, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  CHECK(napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props));
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
