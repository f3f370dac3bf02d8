// ZeroC Ice C++ benchmark client for any server implementing Interop::Tester
// (tests/interop/Test.ice): built with Ice 3.7's C++11 mapping or with Ice 3.8, as the server.
// Usage: ice-tester-client <proxy-string> [--quick] [--stepped] [--Ice.Prop=value ...]
// Runs a fixed workload and prints one line per test: "RESULT <name> <value> <unit>", or
// "RESULT <name> error <what>". Exits 0 when every test produced a value, 1 otherwise.
// Without --quick every call count is 5 times the one below (sizes per call stay the same).
// With --stepped it warms up, prints "warm", then runs each test named on a line of its
// standard input (printing its RESULT line) until end of input, so that a benchmark can
// alternate clients test by test.
#include <Ice/Ice.h>
#include <Test.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace std;
using namespace Interop;

namespace
{

using Clock = chrono::steady_clock;
#if ICE_INT_VERSION >= 30800
using TesterHandle = std::optional<TesterPrx>;
using ByteElement = std::byte; // an element of a ByteSeq
#else
using TesterHandle = shared_ptr<TesterPrx>;
using ByteElement = Ice::Byte;
#endif

bool allProduced = true;

// With --stepped, the one test to run next; empty: every selected test.
string steppedTest;

// Whether runTests found a test to run (with --stepped: whether the name was a test's).
bool ranATest = false;

double secondsSince(Clock::time_point start)
{
    return chrono::duration<double>(Clock::now() - start).count();
}

string oneLine(string s)
{
    for(auto& c : s)
    {
        if(c == '\n' || c == '\r')
        {
            c = ' ';
        }
    }
    return s;
}

// Runs one test; f returns its value. Prints the RESULT line either way.
// Whether `name` is among the tests of ICE_TESTER_TESTS (comma-separated); all when unset.
bool selected(const string& name)
{
    if(!steppedTest.empty())
    {
        return name == steppedTest;
    }
    const char* list = getenv("ICE_TESTER_TESTS");
    if(list == nullptr || *list == '\0')
    {
        return true;
    }
    string tests = string(",") + list + ",";
    return tests.find("," + name + ",") != string::npos;
}

void runTest(const string& name, const string& unit, const function<double()>& f)
{
    if(!selected(name))
    {
        return;
    }
    ranATest = true;
    string line;
    try
    {
        char value[64];
        snprintf(value, sizeof(value), "%.2f", f());
        line = "RESULT " + name + " " + value + " " + unit;
    }
    catch(const exception& e)
    {
        allProduced = false;
        line = "RESULT " + name + " error " + oneLine(e.what());
    }
    catch(...)
    {
        allProduced = false;
        line = "RESULT " + name + " error unknown exception";
    }
    cout << line << endl;
}

// Calls getCounter() until it returns target; gives up after 60 s.
void awaitCounter(const TesterHandle& t, int target)
{
    auto deadline = Clock::now() + chrono::seconds(60);
    for(;;)
    {
        int got = t->getCounter();
        if(got == target)
        {
            return;
        }
        if(got > target)
        {
            throw runtime_error("getCounter returned " + to_string(got) + ", expected " + to_string(target));
        }
        if(Clock::now() > deadline)
        {
            throw runtime_error("getCounter still " + to_string(got) + " of " + to_string(target) + " after 60 s");
        }
    }
}

double mbits(double bytesPerCall, int calls, double seconds)
{
    return bytesPerCall * calls * 8 / seconds / 1e6;
}

// State shared by the AMI test's main loop and the reply callbacks.
struct Window
{
    mutex m;
    condition_variable cv;
    int inFlight = 0;
    int done = 0;
    exception_ptr failure;
};

// 5,000 pings (times scale) before any test. Returns whether they all succeeded.
bool warmUp(const TesterHandle& t, int scale)
{
    const int warmup = 5000 * scale;
    try
    {
        for(int i = 0; i < warmup; ++i)
        {
            t->ping();
        }
        return true;
    }
    catch(const exception& e)
    {
        allProduced = false;
        cerr << "ice-tester-client: warm-up failed: " << oneLine(e.what()) << endl;
        return false;
    }
}

// Runs the selected tests (see selected), each printing its RESULT line.
void runTests(const TesterHandle& t, int scale)
{
    runTest("twoway", "calls/s", [&] {
        const int n = 10000 * scale;
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            t->ping();
        }
        return n / secondsSince(start);
    });

    runTest("oneway", "msg/s", [&] {
        const int n = 40000 * scale;
        auto oneway = t->ice_oneway();
        t->resetCounter();
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            oneway->incCounter(1);
        }
        awaitCounter(t, n);
        return n / secondsSince(start);
    });

    runTest("batch_oneway", "msg/s", [&] {
        const int n = 200000 * scale;
        const int flushEvery = 10000;
        auto batch = t->ice_batchOneway();
        t->resetCounter();
        auto start = Clock::now();
        for(int i = 1; i <= n; ++i)
        {
            batch->incCounter(1);
            if(i % flushEvery == 0)
            {
                batch->ice_flushBatchRequests();
            }
        }
        batch->ice_flushBatchRequests(); // no-op unless n is not a multiple of flushEvery
        awaitCounter(t, n);
        return n / secondsSince(start);
    });

    runTest("ami", "calls/s", [&] {
        const int n = 20000 * scale;
        const int maxInFlight = 1000;
        auto w = make_shared<Window>();
        auto deadline = Clock::now() + chrono::seconds(120);
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            {
                unique_lock<mutex> lock(w->m);
                if(!w->cv.wait_until(lock, deadline, [&] { return w->inFlight < maxInFlight || w->failure; }))
                {
                    throw runtime_error("no reply for 120 s");
                }
                if(w->failure)
                {
                    rethrow_exception(w->failure);
                }
                ++w->inFlight;
            }
            // Not under the lock: a callback may run on this thread.
            t->pingAsync(
                [w] {
                    lock_guard<mutex> lock(w->m);
                    --w->inFlight;
                    ++w->done;
                    w->cv.notify_one();
                },
                [w](exception_ptr e) {
                    lock_guard<mutex> lock(w->m);
                    --w->inFlight;
                    ++w->done;
                    if(!w->failure)
                    {
                        w->failure = e;
                    }
                    w->cv.notify_one();
                });
        }
        unique_lock<mutex> lock(w->m);
        if(!w->cv.wait_until(lock, deadline, [&] { return w->done == n; }))
        {
            throw runtime_error("no reply for 120 s");
        }
        double seconds = secondsSince(start);
        if(w->failure)
        {
            rethrow_exception(w->failure);
        }
        return n / seconds;
    });

    const int byteSize = 500000;
    runTest("bytes_send", "Mbit/s", [&] {
        const int n = 200 * scale;
        ByteSeq payload(byteSize);
        for(size_t k = 0; k < payload.size(); ++k)
        {
            payload[k] = static_cast<ByteElement>(k & 0xFF);
        }
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            t->sendByteSeq(payload);
        }
        return mbits(byteSize, n, secondsSince(start));
    });

    runTest("bytes_recv", "Mbit/s", [&] {
        const int n = 200 * scale;
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            if(t->recvByteSeq(byteSize).size() != static_cast<size_t>(byteSize))
            {
                throw runtime_error("recvByteSeq returned the wrong size");
            }
        }
        return mbits(byteSize, n, secondsSince(start));
    });

    const int fixedCount = 50000;
    const double fixedBytes = 800000; // 16 bytes per Fixed
    runTest("fixed_send", "Mbit/s", [&] {
        const int n = 40 * scale;
        FixedSeq payload(fixedCount);
        for(int k = 0; k < fixedCount; ++k)
        {
            payload[static_cast<size_t>(k)] = Fixed{k, -k, k * 0.5};
        }
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            t->sendFixedSeq(payload);
        }
        return mbits(fixedBytes, n, secondsSince(start));
    });

    runTest("fixed_recv", "Mbit/s", [&] {
        const int n = 40 * scale;
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            if(t->recvFixedSeq(fixedCount).size() != static_cast<size_t>(fixedCount))
            {
                throw runtime_error("recvFixedSeq returned the wrong size");
            }
        }
        return mbits(fixedBytes, n, secondsSince(start));
    });

    const int sdCount = 50000;
    const double sdBytes = 650000; // counted as 13 bytes per {"hello", 3.14}
    runTest("sd_send", "Mbit/s", [&] {
        const int n = 20 * scale;
        StringDoubleSeq payload(sdCount, StringDouble{"hello", 3.14});
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            t->sendStringDoubleSeq(payload);
        }
        return mbits(sdBytes, n, secondsSince(start));
    });

    runTest("sd_recv", "Mbit/s", [&] {
        const int n = 20 * scale;
        auto start = Clock::now();
        for(int i = 0; i < n; ++i)
        {
            if(t->recvStringDoubleSeq(sdCount).size() != static_cast<size_t>(sdCount))
            {
                throw runtime_error("recvStringDoubleSeq returned the wrong size");
            }
        }
        return mbits(sdBytes, n, secondsSince(start));
    });
}

}

int main(int argc, char* argv[])
{
    try
    {
        Ice::InitializationData init;
        init.properties = Ice::createProperties(argc, argv); // takes the --Ice.* arguments out of argv
        string proxy;
        bool quick = false;
        bool stepped = false;
        for(int i = 1; i < argc; ++i)
        {
            string a = argv[i];
            if(a == "--quick")
            {
                quick = true;
            }
            else if(a == "--stepped")
            {
                stepped = true;
            }
            else if(proxy.empty() && a.compare(0, 2, "--") != 0)
            {
                proxy = a;
            }
            else
            {
                proxy.clear();
                break;
            }
        }
        if(proxy.empty())
        {
            cerr << "usage: ice-tester-client <proxy-string> [--quick] [--stepped] [--Ice.Prop=value ...]" << endl;
            return 2;
        }
        if(init.properties->getProperty("Ice.MessageSizeMax").empty())
        {
            init.properties->setProperty("Ice.MessageSizeMax", "100000"); // kB
        }

        Ice::CommunicatorHolder ich(init);
        auto tester = Ice::uncheckedCast<TesterPrx>(ich->stringToProxy(proxy));
        if(!tester)
        {
            cerr << "ice-tester-client: null proxy" << endl;
            return 1;
        }
        const int scale = quick ? 1 : 5;
        if(!stepped)
        {
            warmUp(tester, scale);
            runTests(tester, scale);
        }
        else
        {
            if(!warmUp(tester, scale))
            {
                return 1;
            }
            cout << "warm" << endl;
            string line;
            while(getline(cin, line))
            {
                // Surrounding blanks (a "\r" of CRLF input among them) are not part of the name.
                const auto first = line.find_first_not_of(" \t\r");
                line = first == string::npos ? string() : line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
                if(line.empty())
                {
                    continue;
                }
                steppedTest = line;
                ranATest = false;
                runTests(tester, scale);
                if(!ranATest)
                {
                    allProduced = false;
                    cout << "RESULT " << line << " error unknown test" << endl;
                }
            }
        }
    }
    catch(const exception& e)
    {
        cerr << "ice-tester-client: " << oneLine(e.what()) << endl;
        return 1;
    }
    return allProduced ? 0 : 1;
}
