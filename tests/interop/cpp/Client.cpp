// A ZeroC Ice 3.7 C++11 client that checks a server implementing tests/interop/Test.ice.
// Usage: client [--proxy "tester:tcp -h 127.0.0.1 -p 12010"] [--no-shutdown]
// Prints one line per check and ends with "N passed, M failed"; exits 0 only when M is 0.
#include <Ice/Ice.h>
#include <Test.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace std;
using namespace Interop;

static int passed = 0, failed = 0;

static void check(const string& name, const function<void()>& f)
{
    try
    {
        f();
        ++passed;
        cout << "ok   " << name << endl;
    }
    catch(const exception& e)
    {
        ++failed;
        cout << "FAIL " << name << ": " << e.what() << endl;
    }
}

template<typename T> static void eq(const T& got, const T& want, const string& what = "")
{
    if(!(got == want))
    {
        throw runtime_error("unexpected value " + what);
    }
}

template<typename E> static void expect(const function<void()>& f)
{
    try
    {
        f();
    }
    catch(const E&)
    {
        return;
    }
    throw runtime_error("expected exception not raised");
}

static void run(const shared_ptr<TesterPrx>& t, bool v10)
{
    string sfx = v10 ? " (1.0)" : "";
    check("ping" + sfx, [&] { t->ping(); });
    check("ice_isA" + sfx, [&] { eq(t->ice_isA("::Interop::Tester"), true); });
    check("ice_ids" + sfx, [&] { eq(t->ice_ids(), vector<string>{"::Ice::Object", "::Interop::Tester"}); });
    check("ice_id" + sfx, [&] { eq(t->ice_id(), string("::Interop::Tester")); });
    check("opBool" + sfx, [&] { bool b; eq(t->opBool(true, b), false); eq(b, true); });
    check("opByte" + sfx, [&] { Ice::Byte s; eq<int>(t->opByte(200, 100, s), 200); eq<int>(s, 44); });
    check("opShort" + sfx, [&] { short n; eq<short>(t->opShort(-12345, n), -12345); eq<short>(n, 12345); });
    check("opInt" + sfx, [&] { int p; eq(t->opInt(123456, -7, p), 123456); eq(p, -864192); });
    check("opLong" + sfx, [&] { long long d; eq<long long>(t->opLong(1234567890123LL, d), 1234567890123LL); eq<long long>(d, 2469135780246LL); });
    check("opFloat" + sfx, [&] { float h; eq(t->opFloat(1.5f, h), 1.5f); eq(h, 0.75f); });
    check("opDouble" + sfx, [&] { double s; eq(t->opDouble(2.25, 0.5, s), 2.25); eq(s, 2.75); });
    check("opString" + sfx, [&] { string r; eq(t->opString("h\xc3\xa9llo", "w", r), string("h\xc3\xa9llow")); eq(r, string("oll\xc3\xa9h")); });
    check("opColor" + sfx, [&] { Color n; eq(t->opColor(Color::Blue, n), Color::Blue); eq(n, Color::Red); });
    check("opPoint" + sfx, [&] { Point s; eq(t->opPoint(Point{1, -2}, s), Point{1, -2}); eq(s, Point{-2, 1}); });
    Mixed m{true, 7, -3, 100000, -9000000000LL, 0.25f, -1.5, "mixed", Color::Blue, Point{3, 4}};
    check("opMixed" + sfx, [&] { eq(t->opMixed(m), m); });
    check("opBoolSeq" + sfx, [&] { BoolSeq r; eq(t->opBoolSeq(BoolSeq{true, false, false}, r), BoolSeq{true, false, false}); eq(r, BoolSeq{false, false, true}); });
    check("opByteSeq" + sfx, [&] { ByteSeq r; eq(t->opByteSeq(ByteSeq{0, 1, 255}, r), ByteSeq{0, 1, 255}); eq(r, ByteSeq{255, 1, 0}); });
    check("opShortSeq" + sfx, [&] { ShortSeq r; eq(t->opShortSeq(ShortSeq{1, -1, 300}, r), ShortSeq{1, -1, 300}); eq(r, ShortSeq{300, -1, 1}); });
    check("opIntSeq" + sfx, [&] { IntSeq r; eq(t->opIntSeq(IntSeq{1, 2, 3, -4}, r), IntSeq{1, 2, 3, -4}); eq(r, IntSeq{-4, 3, 2, 1}); });
    check("opLongSeq" + sfx, [&] { LongSeq r; eq(t->opLongSeq(LongSeq{1, -(1LL << 40)}, r), LongSeq{1, -(1LL << 40)}); eq(r, LongSeq{-(1LL << 40), 1}); });
    check("opFloatSeq" + sfx, [&] { FloatSeq r; eq(t->opFloatSeq(FloatSeq{0.5f, -2.0f}, r), FloatSeq{0.5f, -2.0f}); eq(r, FloatSeq{-2.0f, 0.5f}); });
    check("opDoubleSeq" + sfx, [&] { DoubleSeq r; eq(t->opDoubleSeq(DoubleSeq{3.5, -0.25}, r), DoubleSeq{3.5, -0.25}); eq(r, DoubleSeq{-0.25, 3.5}); });
    check("opStringSeq" + sfx, [&] { StringSeq r; eq(t->opStringSeq(StringSeq{"a", "", "b"}, r), StringSeq{"a", "", "b"}); eq(r, StringSeq{"b", "", "a"}); });
    check("opColorSeq" + sfx, [&] { ColorSeq r; eq(t->opColorSeq(ColorSeq{Color::Red, Color::Green}, r), ColorSeq{Color::Red, Color::Green}); eq(r, ColorSeq{Color::Green, Color::Red}); });
    check("opPointSeq" + sfx, [&] { PointSeq r; eq(t->opPointSeq(PointSeq{{1, 2}, {3, 4}}, r), PointSeq{{1, 2}, {3, 4}}); eq(r, PointSeq{{3, 4}, {1, 2}}); });
    FixedSeq fixed;
    for(int k = 0; k < 300; ++k)
    {
        fixed.push_back(Fixed{k, -k, k * 0.5});
    }
    check("opFixedSeq" + sfx, [&] { FixedSeq r; eq(t->opFixedSeq(fixed, r), fixed); eq(r, FixedSeq(fixed.rbegin(), fixed.rend())); });
    check("opStringDoubleSeq" + sfx, [&] { StringDoubleSeq a{{"x", 1.0}, {"yz", 2.5}}, r; eq(t->opStringDoubleSeq(a, r), a); eq(r, StringDoubleSeq{{"yz", 2.5}, {"x", 1.0}}); });
    check("opMixedSeq" + sfx, [&] { MixedSeq r; eq(t->opMixedSeq(MixedSeq{m, m}, r), MixedSeq{m, m}); eq(r, MixedSeq{m, m}); });
    check("opIntSeqSeq" + sfx, [&] { IntSeqSeq r; eq(t->opIntSeqSeq(IntSeqSeq{{1, 2}, {}, {3}}, r), IntSeqSeq{{1, 2}, {}, {3}}); eq(r, IntSeqSeq{{3}, {}, {1, 2}}); });
    check("opStringIntDict" + sfx, [&] { StringIntDict mg; eq(t->opStringIntDict(StringIntDict{{"a", 1}, {"b", 2}}, StringIntDict{{"b", 3}, {"c", 4}}, mg), StringIntDict{{"a", 1}, {"b", 2}}); eq(mg, StringIntDict{{"a", 1}, {"b", 3}, {"c", 4}}); });
    check("opIntStringDict" + sfx, [&] { eq(t->opIntStringDict(IntStringDict{{1, "one"}, {-2, "two"}}), IntStringDict{{1, "one"}, {-2, "two"}}); });
    check("opStringPointDict" + sfx, [&] { eq(t->opStringPointDict(StringPointDict{{"p", {1, 2}}}), StringPointDict{{"p", {1, 2}}}); });
    check("opPointStringDict" + sfx, [&] { eq(t->opPointStringDict(PointStringDict{{{1, 2}, "p"}}), PointStringDict{{{1, 2}, "p"}}); });
    check("opStringStringSeqDict" + sfx, [&] { eq(t->opStringStringSeqDict(StringStringSeqDict{{"k", {"v1", "v2"}}}), StringStringSeqDict{{"k", {"v1", "v2"}}}); });
    if(!v10)
    {
        check("opOptionalInt set", [&] { Ice::optional<int> b; auto r = t->opOptionalInt(42, b); eq(r && *r == 42 && b && *b == 42, true); });
        check("opOptionalInt unset", [&] { Ice::optional<int> b; auto r = t->opOptionalInt(Ice::nullopt, b); eq(!r && !b, true); });
        check("opOptionalString", [&] { Ice::optional<string> b; auto r = t->opOptionalString(string("opt"), b); eq(r && *r == "opt" && b && *b == "opt", true); });
        check("opOptionalPoint", [&] { auto r = t->opOptionalPoint(Point{5, 6}); eq(r && *r == Point{5, 6}, true); });
        check("opOptionalIntSeq", [&] { auto r = t->opOptionalIntSeq(IntSeq{7, 8, 9}); eq(r && *r == IntSeq{7, 8, 9}, true); });
    }
    check("throwBase" + sfx, [&] {
        try { t->throwBase("bad"); throw runtime_error("no exception"); }
        catch(const DerivedError&) { throw runtime_error("wrong type"); }
        catch(const BaseError& e) { eq(e.reason, string("bad")); }
    });
    check("throwDerived" + sfx, [&] {
        try { t->throwDerived("worse", 7); throw runtime_error("no exception"); }
        catch(const DerivedError& e) { eq(e.reason, string("worse")); eq(e.code, 7); }
    });
    check("throwOther" + sfx, [&] {
        try { t->throwOther(IntSeq{1, 2}); throw runtime_error("no exception"); }
        catch(const OtherError& e) { eq(e.values, IntSeq{1, 2}); }
    });
    check("throwUndeclared" + sfx, [&] { expect<Ice::UnknownUserException>([&] { t->throwUndeclared("u"); }); });
    check("throwNonSlice" + sfx, [&] { expect<Ice::UnknownException>([&] { t->throwNonSlice(); }); });
    check("getContext" + sfx, [&] { eq(t->getContext(Ice::Context{{"k", "v"}}), StringStringDict{{"k", "v"}}); });
    check("getFacet" + sfx, [&] { eq(t->getFacet(), string("")); });
    check("getEcho" + sfx, [&] { eq(t->getEcho()->echoString("e"), string("e")); });
    check("getSelf" + sfx, [&] { eq(t->getSelf()->ice_getIdentity().name, string("tester")); });
    check("echoProxy" + sfx, [&] {
        auto p = Ice::uncheckedCast<EchoPrx>(t->ice_getCommunicator()->stringToProxy("x -f fac:tcp -h 127.0.0.1 -p 4061 -t 5000:udp -h 239.1.2.3 -p 5000"));
        auto want = v10 ? p->ice_encodingVersion(Ice::Encoding_1_0) : p;
        eq(Ice::targetEqualTo(t->echoProxy(p), want), true);
    });
    check("echoProxy null" + sfx, [&] { eq(t->echoProxy(nullptr) == nullptr, true); });
    check("callEcho" + sfx, [&] { eq(t->callEcho(t->getEcho(), "hi"), string("hi")); });
    check("facet echo" + sfx, [&] { eq(Ice::uncheckedCast<EchoPrx>(t->ice_facet("echo"))->echoString("f"), string("f")); });
    check("named default servant" + sfx, [&] { eq(Ice::uncheckedCast<NamedPrx>(t->ice_identity(Ice::stringToIdentity("named/bob")))->name(), string("bob")); });
    check("ObjectNotExist" + sfx, [&] { expect<Ice::ObjectNotExistException>([&] { t->ice_identity(Ice::stringToIdentity("nobody"))->ice_ping(); }); });
    check("FacetNotExist" + sfx, [&] { expect<Ice::FacetNotExistException>([&] { t->ice_facet("nofacet")->ice_ping(); }); });
    check("OperationNotExist" + sfx, [&] { expect<Ice::OperationNotExistException>([&] { Ice::uncheckedCast<EchoPrx>(t)->echoString("x"); }); });
    check("batch oneway" + sfx, [&] {
        t->resetCounter();
        auto b = t->ice_batchOneway();
        for(int i = 0; i < 100; ++i)
        {
            b->incCounter(1);
        }
        b->ice_flushBatchRequests();
        auto deadline = chrono::steady_clock::now() + chrono::seconds(5);
        while(t->getCounter() != 100 && chrono::steady_clock::now() < deadline)
        {
            this_thread::sleep_for(chrono::milliseconds(10));
        }
        eq(t->getCounter(), 100);
    });
    check("compression" + sfx, [&] {
        auto z = t->ice_compress(true);
        ByteSeq data(20000);
        for(size_t k = 0; k < data.size(); ++k)
        {
            data[k] = static_cast<Ice::Byte>(k);
        }
        z->sendByteSeq(data);
        eq(z->recvByteSeq(20000), data);
    });
    check("recvFixedSeq 50000" + sfx, [&] { auto r = t->recvFixedSeq(50000); eq(r.size(), size_t(50000)); eq(r[49999], Fixed{49999, -49999, 24999.5}); });
    check("asynchronous dispatch" + sfx, [&] {
        auto start = chrono::steady_clock::now();
        vector<future<int>> f;
        for(int k = 0; k < 5; ++k)
        {
            f.push_back(t->sleepThenReturnAsync(300, k));
        }
        t->ping();
        auto ping = chrono::steady_clock::now() - start;
        for(int k = 0; k < 5; ++k)
        {
            eq(f[k].get(), k);
        }
        auto all = chrono::steady_clock::now() - start;
        if(ping > chrono::milliseconds(250) || all > chrono::milliseconds(1500))
        {
            throw runtime_error("dispatch was not asynchronous");
        }
    });
    check("invocation timeout" + sfx, [&] { expect<Ice::InvocationTimeoutException>([&] { t->ice_invocationTimeout(100)->sleepThenReturn(1000, 1); }); });
}

int main(int argc, char* argv[])
{
    string proxy = "tester:tcp -h 127.0.0.1 -p 12010";
    bool shutdown = true;
    for(int i = 1; i < argc; ++i)
    {
        string a = argv[i];
        if(a == "--proxy" && i + 1 < argc)
        {
            proxy = argv[++i];
        }
        else if(a == "--no-shutdown")
        {
            shutdown = false;
        }
    }
    try
    {
        Ice::CommunicatorHolder ich(argc, argv);
        auto t = Ice::checkedCast<TesterPrx>(ich->stringToProxy(proxy));
        if(!t)
        {
            cout << "FAIL checkedCast" << endl;
            return 1;
        }
        run(t, false);
        run(t->ice_encodingVersion(Ice::Encoding_1_0), true);
        if(shutdown)
        {
            check("shutdown", [&] { t->shutdown(); });
        }
    }
    catch(const exception& e)
    {
        cout << "FAIL " << e.what() << endl;
        ++failed;
    }
    cout << passed << " passed, " << failed << " failed" << endl;
    return failed == 0 ? 0 : 1;
}
