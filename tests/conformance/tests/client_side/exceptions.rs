//! Ice/exceptions: the client checks of `AllTests.py` against Ice's Python server.
//!
//! Ported: 38 checks (assertions in the source) — user exceptions caught as their exact, base
//! and derived types (the generated error enum of each operation stands for Python's `except`
//! clauses: the variant is the type received, its fields the members), undeclared exceptions,
//! the memory limit on replies and requests, object/facet/operation not exist, unknown local
//! and non-Ice exceptions, and the AMD-only operations.
//!
//! Not ported, as they do not apply to floe's client:
//! - servant, servant locator and value factory registration errors (local object adapter
//!   and factory API, not the client side of the protocol);
//! - the futures and AMI variants (floe's calls are all futures: the checks below are them).

use floe::{CallError, Error, Identity, Proxy};
use floe_conformance::generated::exceptions::test::*;

use super::{expect_err, Helper};

/// The user exception of a call that must fail with one.
#[track_caller]
fn user<E: std::fmt::Debug>(result: Result<(), CallError<E>>) -> E {
    match result {
        Err(CallError::User(e)) => e,
        other => panic!("expected a user exception, got {other:?}"),
    }
}

pub(crate) async fn all_tests(h: Helper) {
    let base = h.proxy("thrower");
    let thrower = ThrowerPrx::checked_cast(&base).await.expect("checkedCast").expect("a Thrower");
    assert_eq!(*thrower.as_object(), base);

    // Exact types.
    match user(thrower.throw_aas_a(1).await) {
        ThrowerThrowAasAError::TestA(ex) => assert_eq!(ex.a_mem, 1),
        other => panic!("expected A, got {other:?}"),
    }
    match user(thrower.throw_aor_das_aor_d(1).await) {
        ThrowerThrowAorDasAorDError::TestA(ex) => assert_eq!(ex.a_mem, 1),
        other => panic!("expected A, got {other:?}"),
    }
    match user(thrower.throw_aor_das_aor_d(-1).await) {
        ThrowerThrowAorDasAorDError::D(ex) => assert_eq!(ex.d_mem, -1),
        other => panic!("expected D, got {other:?}"),
    }
    match user(thrower.throw_bas_b(1, 2).await) {
        ThrowerThrowBasBError::B(ex) => assert_eq!((ex.a_mem, ex.b_mem), (1, 2)),
        other => panic!("expected B, got {other:?}"),
    }
    match user(thrower.throw_cas_c(1, 2, 3).await) {
        ThrowerThrowCasCError::C(ex) => assert_eq!((ex.a_mem, ex.b_mem, ex.c_mem), (1, 2, 3)),
    }
    match user(thrower.throw_mod_a(1, 2).await) {
        ThrowerThrowModAError::A(ex) => assert_eq!((ex.a_mem, ex.a2_mem), (1, 2)),
    }

    // Base types: what arrives is the derived exception, whose base members are set.
    match user(thrower.throw_bas_b(1, 2).await) {
        ThrowerThrowBasBError::B(ex) => assert_eq!(ex.a_mem, 1),
        other => panic!("expected B (an A), got {other:?}"),
    }
    match user(thrower.throw_cas_c(1, 2, 3).await) {
        ThrowerThrowCasCError::C(ex) => assert_eq!((ex.a_mem, ex.b_mem), (1, 2)),
    }
    match user(thrower.throw_mod_a(1, 2).await) {
        ThrowerThrowModAError::A(ex) => assert_eq!(ex.a_mem, 1),
    }

    // Derived types: an operation declaring the base raises a derived exception.
    match user(thrower.throw_bas_a(1, 2).await) {
        ThrowerThrowBasAError::B(ex) => assert_eq!((ex.a_mem, ex.b_mem), (1, 2)),
        other => panic!("expected B, got {other:?}"),
    }
    match user(thrower.throw_cas_a(1, 2, 3).await) {
        ThrowerThrowCasAError::C(ex) => assert_eq!((ex.a_mem, ex.b_mem, ex.c_mem), (1, 2, 3)),
        other => panic!("expected C, got {other:?}"),
    }
    match user(thrower.throw_cas_b(1, 2, 3).await) {
        ThrowerThrowCasBError::C(ex) => assert_eq!((ex.a_mem, ex.b_mem, ex.c_mem), (1, 2, 3)),
        other => panic!("expected C, got {other:?}"),
    }

    // Undeclared user exceptions arrive as UnknownUserException.
    assert!(thrower.supports_undeclared_exceptions().await.expect("supportsUndeclaredExceptions"));
    let unknown_user = |e: &Error| matches!(e, Error::UnknownUserException(_));
    expect_err(thrower.throw_undeclared_a(1).await, "UnknownUserException", unknown_user);
    expect_err(thrower.throw_undeclared_b(1, 2).await, "UnknownUserException", unknown_user);
    expect_err(thrower.throw_undeclared_c(1, 2, 3).await, "UnknownUserException", unknown_user);

    // Ice.MessageSizeMax=10 on both sides: a 20 KB reply is refused by the client, a 20 KB
    // request by the server (which closes the connection, or reports a local exception).
    expect_err(thrower.throw_memory_limit_exception(&floe::bytes::Bytes::new()).await, "MemoryLimitException", |e| {
        matches!(e, Error::MemoryLimit { .. })
    });
    expect_err(
        thrower.throw_memory_limit_exception(&floe::bytes::Bytes::from(vec![0u8; 20 * 1024])).await,
        "ConnectionLostException or UnknownLocalException",
        |e| matches!(e, Error::ConnectionLost(_) | Error::UnknownLocalException(_)),
    );

    // Object not exist.
    let id = Identity::new("does not exist");
    let thrower2 = ThrowerPrx::unchecked_cast(&thrower.ice_identity(id.clone()));
    match thrower2.throw_aas_a(1).await {
        Err(CallError::Local(Error::ObjectNotExist { identity, .. })) => assert_eq!(identity, id),
        other => panic!("expected ObjectNotExistException, got {other:?}"),
    }

    // Facet not exist.
    let thrower2 = ThrowerPrx::unchecked_cast(&thrower.ice_facet("no such facet"));
    match thrower2.ice_ping().await {
        Err(Error::FacetNotExist { facet, .. }) => assert_eq!(facet, "no such facet"),
        other => panic!("expected FacetNotExistException, got {other:?}"),
    }

    // Operation not exist.
    let thrower2 = WrongOperationPrx::unchecked_cast(&thrower);
    match thrower2.no_such_operation().await {
        Err(Error::OperationNotExist { operation, .. }) => assert_eq!(operation, "noSuchOperation"),
        other => panic!("expected OperationNotExistException, got {other:?}"),
    }

    // Unknown local exception.
    expect_err(thrower.throw_local_exception().await, "UnknownLocalException", |e| {
        matches!(e, Error::UnknownLocalException(_))
    });
    expect_err(thrower.throw_local_exception_idempotent().await, "UnknownLocalException", |e| {
        matches!(e, Error::UnknownLocalException(_) | Error::OperationNotExist { .. })
    });

    // Unknown non-Ice exception.
    expect_err(thrower.throw_non_ice_exception().await, "UnknownException", |e| {
        matches!(e, Error::UnknownException(_))
    });

    // Exceptions raised by AMD servants after they answered.
    thrower.throw_after_response().await.expect("throwAfterResponse");
    match thrower.throw_after_exception().await {
        Err(CallError::User(ThrowerThrowAfterExceptionError::TestA(_))) => {}
        other => panic!("expected A, got {other:?}"),
    }

    thrower.shutdown().await.expect("shutdown");
}
