// ZeroC Ice C++ server for tests/interop/Test.ice, used as a benchmark peer: built with Ice
// 3.7's C++11 mapping (Debian's libzeroc-ice-dev) or with Ice 3.8 (scripts/build-ice38); the
// few places where the two APIs differ are under ICE_INT_VERSION.
// Usage: ice-tester-server <port | endpoints> [--Ice.Prop=value ...] [--IceSSL.Prop=value ...]
// Listens on "tcp -h 127.0.0.1 -p <port>" (or on the endpoints given, such as
// "ssl -h 127.0.0.1 -p 12011" with the IceSSL plugin's properties; adapter "Tester"), hosts every object Test.ice
// says a server hosts, prints "ready" once the adapter is active, and exits 0 after the
// shutdown() operation or on SIGTERM / SIGINT / SIGHUP.
#include <Ice/Ice.h>
#include <Test.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std;
using namespace Interop;

namespace
{

#if ICE_INT_VERSION >= 30800
using ByteValue = std::uint8_t;    // a Slice byte
using ByteElement = std::byte;     // an element of a ByteSeq
using LongValue = std::int64_t;
template<typename T> using Optional = std::optional<T>;
using EchoHandle = std::optional<EchoPrx>;
using TesterHandle = std::optional<TesterPrx>;
using Bytes = pair<const std::byte*, const std::byte*>;
#else
using ByteValue = Ice::Byte;
using ByteElement = Ice::Byte;
using LongValue = long long;
template<typename T> using Optional = Ice::optional<T>;
using EchoHandle = shared_ptr<EchoPrx>;
using TesterHandle = shared_ptr<TesterPrx>;
using Bytes = pair<const Ice::Byte*, const Ice::Byte*>;
#endif

// The counter of incCounter / getCounter / resetCounter, one per process.
atomic<int> counter(0);

template<typename T> T reversedCopy(const T& v)
{
    return T(v.rbegin(), v.rend());
}

// a with its Unicode scalar values in reverse order (Ice strings are UTF-8 here: the
// communicator has no string converter).
string reverseScalars(const string& a)
{
    string out;
    out.reserve(a.size());
    size_t end = a.size();
    while(end > 0)
    {
        size_t start = end - 1;
        while(start > 0 && (static_cast<unsigned char>(a[start]) & 0xC0) == 0x80)
        {
            --start;
        }
        out.append(a, start, end - start);
        end = start;
    }
    return out;
}

// Completes the asynchronous sleepThenReturn dispatches: one thread, deadlines in order.
class SleepTimer
{
public:
    using Reply = function<void()>;
    using Fail = function<void(exception_ptr)>;

    SleepTimer() : _stopped(false), _thread(&SleepTimer::run, this) {}

    ~SleepTimer()
    {
        // Callbacks run on the timer thread hold no reference to the timer, so the last
        // reference never goes away on that thread.
        cancelAll();
        _thread.join();
    }

    // Runs reply at the deadline, or fail if the timer is cancelled before.
    void schedule(chrono::steady_clock::time_point at, Reply reply, Fail fail)
    {
        {
            lock_guard<mutex> lock(_mutex);
            if(!_stopped)
            {
                _pending.emplace(at, make_pair(move(reply), move(fail)));
                _cv.notify_one();
                return;
            }
        }
        fail(make_exception_ptr(Ice::ObjectAdapterDeactivatedException(__FILE__, __LINE__, "Tester")));
    }

    // Fails every pending sleep at once and stops the thread: used when the server shuts
    // down, so that a long sleep does not hold the shutdown up.
    void cancelAll()
    {
        multimap<chrono::steady_clock::time_point, pair<Reply, Fail>> pending;
        {
            lock_guard<mutex> lock(_mutex);
            _stopped = true;
            pending.swap(_pending);
            _cv.notify_one();
        }
        for(auto& p : pending)
        {
            p.second.second(make_exception_ptr(Ice::ObjectAdapterDeactivatedException(__FILE__, __LINE__, "Tester")));
        }
    }

private:
    void run()
    {
        unique_lock<mutex> lock(_mutex);
        while(!_stopped)
        {
            if(_pending.empty())
            {
                _cv.wait(lock);
                continue;
            }
            auto first = _pending.begin();
            if(first->first > chrono::steady_clock::now())
            {
                _cv.wait_until(lock, first->first);
                continue;
            }
            Reply reply = move(first->second.first);
            _pending.erase(first);
            lock.unlock();
            reply();
            lock.lock();
        }
    }

    mutex _mutex;
    condition_variable _cv;
    bool _stopped;
    multimap<chrono::steady_clock::time_point, pair<Reply, Fail>> _pending;
    thread _thread;
};

class EchoI : public Echo
{
public:
    string echoString(string s, const Ice::Current&) override { return s; }
};

class NamedI : public Named
{
public:
    string name(const Ice::Current& current) override { return current.id.name; }
};

class TesterI : public Tester
{
public:
    explicit TesterI(shared_ptr<SleepTimer> timer) : _timer(move(timer)) {}

    void ping(const Ice::Current&) override {}

    bool opBool(bool a, bool& b, const Ice::Current&) override
    {
        b = a;
        return !a;
    }

    ByteValue opByte(ByteValue a, ByteValue b, ByteValue& sum, const Ice::Current&) override
    {
        sum = static_cast<ByteValue>((a + b) & 0xFF);
        return a;
    }

    short opShort(short a, short& neg, const Ice::Current&) override
    {
        neg = static_cast<int16_t>(static_cast<uint16_t>(0u - static_cast<uint16_t>(a)));
        return a;
    }

    int opInt(int a, int b, int& product, const Ice::Current&) override
    {
        product = static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
        return a;
    }

    LongValue opLong(LongValue a, LongValue& doubled, const Ice::Current&) override
    {
        doubled = static_cast<int64_t>(static_cast<uint64_t>(a) * 2u);
        return a;
    }

    float opFloat(float a, float& half, const Ice::Current&) override
    {
        half = a / 2;
        return a;
    }

    double opDouble(double a, double b, double& sum, const Ice::Current&) override
    {
        sum = a + b;
        return a;
    }

    string opString(string a, string b, string& reversed, const Ice::Current&) override
    {
        reversed = reverseScalars(a);
        return a + b;
    }

    Color opColor(Color a, Color& next, const Ice::Current&) override
    {
        switch(a)
        {
            case Color::Red: next = Color::Green; break;
            case Color::Green: next = Color::Blue; break;
            default: next = Color::Red; break;
        }
        return a;
    }

    Point opPoint(Point a, Point& swapped, const Ice::Current&) override
    {
        swapped = Point{a.y, a.x};
        return a;
    }

    Mixed opMixed(Mixed a, const Ice::Current&) override { return a; }

    BoolSeq opBoolSeq(BoolSeq a, BoolSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    ByteSeq opByteSeq(ByteSeq a, ByteSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    ShortSeq opShortSeq(ShortSeq a, ShortSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    IntSeq opIntSeq(IntSeq a, IntSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    LongSeq opLongSeq(LongSeq a, LongSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    FloatSeq opFloatSeq(FloatSeq a, FloatSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    DoubleSeq opDoubleSeq(DoubleSeq a, DoubleSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    StringSeq opStringSeq(StringSeq a, StringSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    ColorSeq opColorSeq(ColorSeq a, ColorSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    PointSeq opPointSeq(PointSeq a, PointSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    FixedSeq opFixedSeq(FixedSeq a, FixedSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    StringDoubleSeq opStringDoubleSeq(StringDoubleSeq a, StringDoubleSeq& r, const Ice::Current&) override
    {
        r = reversedCopy(a);
        return a;
    }
    MixedSeq opMixedSeq(MixedSeq a, MixedSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }
    IntSeqSeq opIntSeqSeq(IntSeqSeq a, IntSeqSeq& r, const Ice::Current&) override { r = reversedCopy(a); return a; }

    StringIntDict opStringIntDict(StringIntDict a, StringIntDict b, StringIntDict& merged, const Ice::Current&) override
    {
        merged = a;
        for(const auto& e : b)
        {
            merged[e.first] = e.second;
        }
        return a;
    }

    IntStringDict opIntStringDict(IntStringDict a, const Ice::Current&) override { return a; }
    StringPointDict opStringPointDict(StringPointDict a, const Ice::Current&) override { return a; }
    PointStringDict opPointStringDict(PointStringDict a, const Ice::Current&) override { return a; }
    StringStringSeqDict opStringStringSeqDict(StringStringSeqDict a, const Ice::Current&) override { return a; }

    Optional<int> opOptionalInt(Optional<int> a, Optional<int>& b, const Ice::Current&) override
    {
        b = a;
        return a;
    }

    Optional<string> opOptionalString(Optional<string> a, Optional<string>& b,
                                           const Ice::Current&) override
    {
        b = a;
        return a;
    }

    Optional<Point> opOptionalPoint(Optional<Point> a, const Ice::Current&) override { return a; }
    Optional<IntSeq> opOptionalIntSeq(Optional<IntSeq> a, const Ice::Current&) override { return a; }

    void throwBase(string reason, const Ice::Current&) override { throw BaseError(reason); }
    void throwDerived(string reason, int code, const Ice::Current&) override { throw DerivedError(reason, code); }
    void throwOther(IntSeq values, const Ice::Current&) override { throw OtherError(values); }
    // Not declared by the operation: the run time turns it into UnknownUserException.
    void throwUndeclared(string reason, const Ice::Current&) override { throw DerivedError(reason, 1); }
    // Not a Slice exception: the caller gets UnknownException.
    void throwNonSlice(const Ice::Current&) override { throw runtime_error("throwNonSlice: not a Slice exception"); }

    StringStringDict getContext(const Ice::Current& current) override
    {
        return StringStringDict(current.ctx.begin(), current.ctx.end());
    }
    string getFacet(const Ice::Current& current) override { return current.facet; }

    EchoHandle getEcho(const Ice::Current& current) override
    {
        return Ice::uncheckedCast<EchoPrx>(current.adapter->createProxy(Ice::Identity{"echo", ""}));
    }

    TesterHandle getSelf(const Ice::Current& current) override
    {
        return Ice::uncheckedCast<TesterPrx>(current.adapter->createProxy(current.id));
    }

    EchoHandle echoProxy(EchoHandle p, const Ice::Current&) override { return p; }

    string callEcho(EchoHandle e, string s, const Ice::Current&) override
    {
        if(!e)
        {
            throw invalid_argument("callEcho: null proxy");
        }
        return e->echoString(s);
    }

    void incCounter(int n, const Ice::Current&) override { counter.fetch_add(n, memory_order_relaxed); }
    int getCounter(const Ice::Current&) override { return counter.load(); }
    void resetCounter(const Ice::Current&) override { counter.store(0); }

    void sendByteSeq(ByteSeq, const Ice::Current&) override {}

    ByteSeq recvByteSeq(int size, const Ice::Current&) override
    {
        ByteSeq r(static_cast<size_t>(max(size, 0)));
        for(size_t k = 0; k < r.size(); ++k)
        {
            r[k] = static_cast<ByteElement>(k & 0xFF);
        }
        return r;
    }

    void sendFixedSeq(FixedSeq, const Ice::Current&) override {}

    FixedSeq recvFixedSeq(int count, const Ice::Current&) override
    {
        FixedSeq r(static_cast<size_t>(max(count, 0)));
        for(int k = 0; k < count; ++k)
        {
            r[static_cast<size_t>(k)] = Fixed{k, -k, k * 0.5};
        }
        return r;
    }

    void sendStringDoubleSeq(StringDoubleSeq, const Ice::Current&) override {}

    StringDoubleSeq recvStringDoubleSeq(int count, const Ice::Current&) override
    {
        return StringDoubleSeq(static_cast<size_t>(max(count, 0)), StringDouble{"hello", 3.14});
    }

    int opIdempotent(int x, const Ice::Current&) override
    {
        return static_cast<int32_t>(static_cast<uint32_t>(x) + 1u);
    }

    // Never reached: TesterDispatch sends sleepThenReturn to SleepThenReturn below. Kept
    // correct (blocking) for a caller that uses this servant directly.
    int sleepThenReturn(int ms, int value, const Ice::Current&) override
    {
        this_thread::sleep_for(chrono::milliseconds(max(ms, 0)));
        return value;
    }

    void shutdown(const Ice::Current& current) override
    {
        // Pending sleeps are failed at once; the run time still sends this call's reply
        // before the adapter finishes deactivating.
        _timer->cancelAll();
        current.adapter->getCommunicator()->shutdown();
    }

private:
    shared_ptr<SleepTimer> _timer;
};

// sleepThenReturn with asynchronous dispatch (AMD). Test.ice carries no ["amd"] metadata, so
// the generated Tester skeleton only has a synchronous sleepThenReturn; this dynamic servant
// decodes the two int parameters itself, returns at once to the thread pool and has the
// SleepTimer send the reply. The server thread pool therefore stays at Ice's default size
// and keeps serving other requests, on the same connection too, while a call sleeps.
class SleepThenReturn : public Ice::BlobjectArrayAsync
{
public:
    explicit SleepThenReturn(shared_ptr<SleepTimer> timer) : _timer(move(timer)) {}

#if ICE_INT_VERSION >= 30800
    void ice_invokeAsync(Bytes inEncaps,
                         function<void(bool, Bytes)> response,
#else
    void ice_invokeAsync(Bytes inEncaps,
                         function<void(bool, const Bytes&)> response,
#endif
                         function<void(exception_ptr)> error,
                         const Ice::Current& current) override
    {
        auto communicator = current.adapter->getCommunicator();
        int ms = 0;
        int value = 0;
        Ice::InputStream in(communicator, inEncaps);
        in.startEncapsulation();
        in.read(ms);
        in.read(value);
        in.endEncapsulation();

        Ice::EncodingVersion encoding = current.encoding;
        auto reply = [communicator, encoding, value, response]()
        {
            Ice::OutputStream out(communicator, encoding);
            out.startEncapsulation();
            out.write(value);
            out.endEncapsulation();
            response(true, out.finished());
        };
        _timer->schedule(chrono::steady_clock::now() + chrono::milliseconds(max(ms, 0)), reply, error);
    }

private:
    shared_ptr<SleepTimer> _timer;
};

// The servant registered as "tester": every request goes to the typed TesterI, except
// sleepThenReturn, which goes to the asynchronous SleepThenReturn.
#if ICE_INT_VERSION >= 30800
class TesterDispatch : public Ice::Object
{
public:
    TesterDispatch(shared_ptr<TesterI> tester, shared_ptr<SleepThenReturn> sleeper) :
        _tester(move(tester)), _sleeper(move(sleeper))
    {
    }

    void dispatch(Ice::IncomingRequest& request, function<void(Ice::OutgoingResponse)> sendResponse) override
    {
        if(request.current().operation == "sleepThenReturn")
        {
            _sleeper->dispatch(request, move(sendResponse));
            return;
        }
        _tester->dispatch(request, move(sendResponse));
    }

private:
    shared_ptr<TesterI> _tester;
    shared_ptr<SleepThenReturn> _sleeper;
};
#else
class TesterDispatch : public Ice::DispatchInterceptor
{
public:
    TesterDispatch(shared_ptr<TesterI> tester, shared_ptr<SleepThenReturn> sleeper) :
        _tester(move(tester)), _sleeper(move(sleeper))
    {
    }

    bool dispatch(Ice::Request& request) override
    {
        if(request.getCurrent().operation == "sleepThenReturn")
        {
            return _sleeper->ice_dispatch(request);
        }
        return _tester->ice_dispatch(request);
    }

private:
    shared_ptr<TesterI> _tester;
    shared_ptr<SleepThenReturn> _sleeper;
};
#endif

void setDefault(const Ice::PropertiesPtr& properties, const string& key, const string& value)
{
    if(properties->getProperty(key).empty())
    {
        properties->setProperty(key, value);
    }
}

}

int main(int argc, char* argv[])
{
    // Before the communicator starts any thread, so that only the handler's thread takes the
    // signals.
    Ice::CtrlCHandler ctrlC;
    try
    {
        Ice::InitializationData init;
        init.properties = Ice::createProperties(argc, argv); // takes the --Ice.* arguments out of argv
        if(argc != 2)
        {
            cerr << "usage: ice-tester-server <port | endpoints> [--Ice.Prop=value ...]" << endl;
            return 2;
        }
        setDefault(init.properties, "Ice.MessageSizeMax", "100000"); // kB

        Ice::CommunicatorHolder ich(init);
        auto communicator = ich.communicator();
        auto timer = make_shared<SleepTimer>();
        ctrlC.setCallback([communicator, timer](int)
        {
            timer->cancelAll();
            communicator->shutdown();
        });

        string where = argv[1];
        bool port = !where.empty() && all_of(where.begin(), where.end(), [](char c) { return c >= '0' && c <= '9'; });
        auto adapter = communicator->createObjectAdapterWithEndpoints("Tester", port ? "tcp -h 127.0.0.1 -p " + where : where);
        auto echo = make_shared<EchoI>();
        auto tester = make_shared<TesterDispatch>(make_shared<TesterI>(timer), make_shared<SleepThenReturn>(timer));
        adapter->add(tester, Ice::Identity{"tester", ""});
        adapter->addFacet(echo, Ice::Identity{"tester", ""}, "echo");
        adapter->add(echo, Ice::Identity{"echo", ""});
        adapter->addDefaultServant(make_shared<NamedI>(), "named");
        adapter->activate();
        cout << "ready" << endl; // endl flushes

        communicator->waitForShutdown();
        ctrlC.setCallback(nullptr);
        timer->cancelAll();
    }
    catch(const exception& e)
    {
        cerr << "ice-tester-server: " << e.what() << endl;
        return 1;
    }
    return 0;
}
