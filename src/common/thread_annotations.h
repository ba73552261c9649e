// Thread-safety annotations: clang's capability attributes, checked by
// -Wthread-safety (an error in clang builds, see CMakeLists.txt). Other
// compilers see no-ops, so the annotations cost nothing there.
//
// Use them with the annotated types in common/mutex.h (libstdc++'s std::mutex
// carries no annotations, so the analysis cannot see it):
//   Mutex mu_;
//   int count_ DLQ_GUARDED_BY(mu_) = 0;
//   void BumpLocked() DLQ_REQUIRES(mu_);
// The attributes are documented at
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html.
#pragma once

#if defined(__clang__)
#define DLQ_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DLQ_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are capabilities (a mutex); `x` names the kind.
#define DLQ_CAPABILITY(x) DLQ_THREAD_ANNOTATION(capability(x))
// On a class: an RAII object that holds a capability for its lifetime.
#define DLQ_SCOPED_CAPABILITY DLQ_THREAD_ANNOTATION(scoped_lockable)

// On a data member: read only with `x` held (shared or exclusive), written
// only with `x` held exclusively.
#define DLQ_GUARDED_BY(x) DLQ_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: the pointee, not the pointer, is guarded by `x`.
#define DLQ_PT_GUARDED_BY(x) DLQ_THREAD_ANNOTATION(pt_guarded_by(x))

// On a capability member: the lock order. Checked only with
// -Wthread-safety-beta.
#define DLQ_ACQUIRED_BEFORE(...) DLQ_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define DLQ_ACQUIRED_AFTER(...) DLQ_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

// On a function: callers must hold the capabilities (exclusively / shared).
#define DLQ_REQUIRES(...) DLQ_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define DLQ_REQUIRES_SHARED(...) DLQ_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: callers must not hold the capabilities (it takes them).
#define DLQ_EXCLUDES(...) DLQ_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it acquires / releases the capabilities (`this` when none
// is named) and returns with them held / released.
#define DLQ_ACQUIRE(...) DLQ_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define DLQ_ACQUIRE_SHARED(...) DLQ_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define DLQ_RELEASE(...) DLQ_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define DLQ_RELEASE_SHARED(...) DLQ_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define DLQ_RELEASE_GENERIC(...) DLQ_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
// On a function: it acquires the capabilities only when it returns `result`.
#define DLQ_TRY_ACQUIRE(...) DLQ_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define DLQ_TRY_ACQUIRE_SHARED(...) DLQ_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))

// On a function: it aborts (or is a no-op in release builds) unless the
// capability is held; the analysis assumes it is held afterwards.
#define DLQ_ASSERT_CAPABILITY(x) DLQ_THREAD_ANNOTATION(assert_capability(x))
#define DLQ_ASSERT_SHARED_CAPABILITY(x) DLQ_THREAD_ANNOTATION(assert_shared_capability(x))

// On a function: it returns a reference to the capability `x`.
#define DLQ_RETURN_CAPABILITY(x) DLQ_THREAD_ANNOTATION(lock_returned(x))

// On a function: the analysis skips its body. For code whose locking the
// analysis cannot follow (a lock taken in one callback and released in
// another); say why at each use.
#define DLQ_NO_THREAD_SAFETY_ANALYSIS DLQ_THREAD_ANNOTATION(no_thread_safety_analysis)
